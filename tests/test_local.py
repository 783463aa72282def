"""Adapters of a `module:EnvClass` target serve the class themselves when given no URL
(`orlgen.runtime.local`): real child servers on loopback, real sessions, real process exits."""

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
from orlgen.runtime.connection import Connection, Target

from tests.support.modules import REPO


def gone(pid: int, seconds: float = 20.0) -> bool:
    """Whether process `pid` has exited (a zombie waiting for its reaper counts as exited)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


PLAY = """
from generated.helpdesk import HelpdeskEnv, build_dataset
from orlgen.runtime import local

first, second = HelpdeskEnv(), HelpdeskEnv()
assert first._connection.url == second._connection.url, (first._connection, second._connection)
row = build_dataset("train", num_tasks=1)[0]
print("PROMPT", first.reset(**row).splitlines()[0])
print("CALL", first.list_policies()[:40].replace("\\n", " "))
print("SERVER", [server.pid for server in local._servers.values()][0], local.log_path("examples.helpdesk:Helpdesk"))
"""


def fresh(code: str, **kwargs) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORLGEN_")}
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
    assert Path(log).is_file() and "orlgen-helpdesk-" in log
    Path(log).unlink()


@pytest.mark.slow
def test_local_server_dies_with_a_killed_parent():
    """SIGKILL leaves no atexit hook to run: the server notices its stdin close and exits."""
    code = PLAY + "\nimport sys, time\nsys.stdout.flush()\ntime.sleep(600)\n"
    process = fresh(code, stderr=subprocess.DEVNULL)
    try:
        server = None
        for line in process.stdout:
            if line.startswith("SERVER "):
                server, log = line.split()[1:]
                break
        assert server is not None
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert gone(int(server))
    Path(log).unlink(missing_ok=True)


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
    from orlgen.runtime.local import ServeError, load_env_class

    with pytest.raises(ServeError, match=r"^module 'examples.echo' has no class 'Nope'$"):
        load_env_class("examples.echo:Nope")
    with pytest.raises(ServeError, match=r"is not an openreward\.environments\.Environment subclass"):
        load_env_class("examples.echo:EchoParams")
