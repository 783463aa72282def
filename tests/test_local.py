"""Adapters of a `module:EnvClass` target serve the class themselves when given no URL
(`orlgen.runtime.session.local`): real child servers on loopback, real sessions, real process exits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from orlgen.runtime import ConfigError
from orlgen.runtime.data.spec import Target
from orlgen.runtime.session.connection import Connection

from tests.support.modules import REPO
from tests.support.waiting import process_state


def gone(pid: int, seconds: float = 20.0) -> bool:
    """Whether process `pid` has exited (a zombie waiting for its reaper counts as exited)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process_state(pid) in (None, "Z"):
            return True
        time.sleep(0.1)
    return False


PLAY = """
from generated.helpdesk import HelpdeskEnv, build_dataset
from orlgen.runtime.session import local

first, second = HelpdeskEnv(), HelpdeskEnv()
assert first._episode.connection.url == second._episode.connection.url, (first._episode.connection, second._episode.connection)
row = build_dataset("train", num_tasks=1)[0]
print("PROMPT", first.reset(**row).splitlines()[0])
print("CALL", first.list_policies()[:40].replace("\\n", " "))
log = local.log_path("examples.helpdesk:Helpdesk")
print("MODE", oct(log.stat().st_mode & 0o777))
print("SERVER", [server.pid for server in local._servers.values()][0], log)
"""


def fresh(code: str, env_extra: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORLGEN_")} | (env_extra or {})
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, **kwargs
    )


@pytest.mark.slow
def test_zero_argument_adapter_serves_its_class_in_a_fresh_interpreter():
    """No URL anywhere: the first adapter starts one server, the second shares it, a rollout
    reaches it, and the server is gone once the interpreter exits."""
    process = fresh(PLAY, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-3000:]
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["PROMPT"].startswith("Support ticket TR-0001")
    assert "error" not in lines["CALL"].lower()
    pid, log = lines["SERVER"].split(" ", 1)
    assert gone(int(pid)), "the local server outlived its interpreter"
    assert lines["MODE"] == "0o600" and Path(log).name.startswith("orlgen-helpdesk-")
    assert str(process.pid) not in Path(log).name  # not a name another user could guess and plant
    assert not Path(log).exists(), "a clean exit removes the server's log"
    assert err == ""


FORK = """
import os, sys, time
sys.stdout.flush()
if os.fork() == 0:  # a child that outlives its parent (a DataLoader worker, a pool process)
    print("CHILD", os.getpid())
    sys.stdout.flush()
    time.sleep(600)
    os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.parametrize("forks", [False, True], ids=["alone", "with-a-forked-child-alive"])
def test_local_server_dies_with_a_killed_parent(forks):
    """SIGKILL leaves no atexit hook to run: the server notices its stdin close and exits, also
    while a child the parent forked is still running (it must not hold the server's stdin)."""
    code = PLAY + (FORK if forks else "") + "\nimport sys, time\nsys.stdout.flush()\ntime.sleep(600)\n"
    process = fresh(code, stderr=subprocess.DEVNULL)
    server = child = None
    try:
        for line in process.stdout:
            if line.startswith("CHILD "):
                child = int(line.split()[1])
            if line.startswith("SERVER "):
                server, log = line.split()[1:]
            if server is not None and (child is not None or not forks):
                break
        assert server is not None
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    try:
        assert gone(int(server)), "the local server outlived its killed parent"
        assert child is None or not gone(child, seconds=0), "the forked child was still running"
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)
        Path(log).unlink(missing_ok=True)


LEAK = """
import os, signal
from orlgen.runtime.session import local

spec = "tests.support.envs.leaky:Leaky"
local.local_url(spec)
server = local._servers[spec]
print("LOG", local.log_path(spec))
if os.environ.get("KILL_SERVER"):
    os.kill(server.pid, signal.SIGKILL)  # the server dies while in use
    server._process.wait()
"""


@pytest.mark.slow
@pytest.mark.parametrize("dies", [False, True], ids=["clean-exit", "server-died"])
def test_the_server_log_is_masked_and_kept_only_on_failure(tmp_path, dies):
    """A server that writes a secret to its output: the log holds `***`, never the value; it is
    removed on a clean exit, and kept and named when the server died."""
    secret = "leaky-key-8c2f1a"
    env = {"LEAKY_API_KEY": secret, **({"KILL_SERVER": "1"} if dies else {})}
    process = fresh(LEAK, stderr=subprocess.PIPE, env_extra=env)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err[-3000:]
    log = Path(out.split("LOG ", 1)[1].strip())
    if not dies:
        assert not log.exists() and err == ""
        return
    assert (
        err
        == f"orlgen: the local server for tests.support.envs.leaky:Leaky exited while in use; its log is kept: {log}\n"
    )
    text = log.read_text()
    log.unlink()
    assert "connecting to the judge with key ***" in text and secret not in text


def test_a_log_name_planted_in_advance_is_never_followed(tmp_path, monkeypatch):
    """Log files are created new (O_EXCL|O_NOFOLLOW) under a random name, private to the user."""
    from orlgen.runtime.session.local import open_log

    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    first, second = open_log("examples.helpdesk:Helpdesk"), open_log("examples.helpdesk:Helpdesk")
    assert first != second and first.parent == tmp_path and first.name.startswith("orlgen-examples_helpdesk_helpdesk-")
    assert (first.stat().st_mode & 0o777, first.read_bytes()) == (0o600, b"")
    victim = tmp_path / "victim"
    victim.write_text("mine")
    monkeypatch.setattr("secrets.token_hex", lambda n: "planted")
    (tmp_path / "orlgen-x-planted.log").symlink_to(victim)
    with pytest.raises(FileExistsError):
        open_log("x")
    assert victim.read_text() == "mine"


def test_explicit_url_and_environment_variable_win(echo_url, monkeypatch):
    target = Target("module", "examples.echo:Echo", "echo")
    monkeypatch.setenv("ORLGEN_ECHO_URL", "http://127.0.0.1:1/")
    assert Connection.resolve(target, "ORLGEN_ECHO_URL", echo_url, None).url == echo_url
    assert Connection.resolve(target, "ORLGEN_ECHO_URL", None, None).url == "http://127.0.0.1:1"


def test_a_target_this_process_cannot_import_says_so_and_how_out(monkeypatch):
    target = Target("module", "examples.nowhere:Nope", "nope")
    with pytest.raises(ConfigError) as caught:
        Connection.resolve(target, "ORLGEN_NOPE_URL", None, None)
    message = str(caught.value)
    assert "\n" not in message
    assert "cannot serve 'examples.nowhere:Nope' in this process" in message
    assert "cannot import 'examples.nowhere': ModuleNotFoundError" in message
    assert "pass base_url= or set ORLGEN_NOPE_URL" in message
    log = message.rsplit("(log: ", 1)[1].split(")", 1)[0]
    Path(log).unlink(missing_ok=True)


def test_a_missing_class_is_named():
    from orlgen.runtime.session.local import ServeError, load_env_class

    with pytest.raises(ServeError, match=r"^module 'examples.echo' has no class 'Nope'$"):
        load_env_class("examples.echo:Nope")
    with pytest.raises(ServeError, match=r"is not an openreward\.environments\.Environment subclass"):
        load_env_class("examples.echo:EchoParams")
