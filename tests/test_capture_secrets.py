"""Capturing environments that need secrets, and forwarding them from generated adapters.

`tests/support/envs/judge.py:Judged` is served by the real `openreward` server: it fails the
session without `JUDGE_API_KEY`, as published LLM-judge envs do, and its task-only `whoami` tool
reports which secrets reached the session. The server runs under `tests/support/servers/header.py`, whose
ASGI middleware records the credentials each request carried (`X-API-Key`, `Authorization`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
from pathlib import Path

import pytest
from orlgen.runtime.data.spec import Target
from orlgen.serve import ServerProcess

from tests.support.cli import invoke, run_orlgen
from tests.support.modules import load_module

REPO = Path(__file__).resolve().parent.parent
TARGET = "tests.support.envs.judge:Judged"
KEY = "judge-key-4f7a"


@pytest.fixture(scope="module")
def header_log(tmp_path_factory):
    """The file the judged server records each request's credentials in (one JSON line each)."""
    return tmp_path_factory.mktemp("headers") / "headers.jsonl"


@pytest.fixture(scope="module")
def judged_url(header_log):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORLGEN_HEADER_LOG", str(header_log))
        server = ServerProcess(TARGET, entry="tests.support.servers.header").start()
    try:
        yield server.url
    finally:
        server.stop()


def recorded(header_log: Path) -> list[dict]:
    """The requests recorded since the last call (the log is emptied), but `/delete_session`: the
    runtime sends it in the background after `/delete` (which carries the same key), so one may
    land after the next case began."""
    lines = header_log.read_text().splitlines() if header_log.exists() else []
    records = [record for record in map(json.loads, lines) if record.get("path") != "/delete_session"]
    header_log.write_text("")
    return records


def _run(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("JUDGE_API_KEY", "OPENREWARD_API_KEY")}
    environ.update(OPENREWARD_DISABLE_UPDATE_CHECK="1", PYTHONPATH=str(REPO), **env)
    environ.pop("OPENREWARD_LOG_LEVEL", None)  # the server's default logging: tracebacks and all
    return run_orlgen(*args, env=environ)


def _files_text(path: Path) -> str:
    return "".join(p.read_text() for p in path.rglob("*") if p.is_file())


@pytest.mark.slow
def test_without_its_secret_the_probe_failure_is_one_line_naming_task_cause_and_fix(tmp_path):
    result = _run("snapshot", TARGET, "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1, "one line, no server traceback"
    line = result.stderr
    assert line.startswith(f"orlgen: error: {TARGET}: the probe session on task train[0] failed: ")
    assert "the server answered 500: KeyError: 'JUDGE_API_KEY is required to reach the judge'" in line
    assert "--secret NAME" in line and "--probes 0, which captures no task-only tools" in line
    log = Path(line.rsplit("(server log: ", 1)[1].removesuffix(")\n"))
    assert "Traceback" in log.read_text() and "JUDGE_API_KEY is required" in log.read_text()
    log.unlink()
    assert list(tmp_path.iterdir()) == []


def test_in_process_the_server_traceback_goes_to_the_log_not_to_sys_stdout(tmp_path, monkeypatch):
    """A capture in a process whose `sys.stdout` is not file descriptor 1 (click's test runner
    here, a notebook for a user): the SDK's structlog prints to the current `sys.stdout`, which
    the file-descriptor redirect alone does not reach."""
    monkeypatch.delenv("JUDGE_API_KEY", raising=False)
    result = invoke("snapshot", TARGET, "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stdout == ""
    log = Path(result.stderr.rsplit("(server log: ", 1)[1].removesuffix(")\n"))
    text = log.read_text()
    log.unlink()
    assert "JUDGE_API_KEY is required" in text


@pytest.mark.slow
def test_a_secret_the_server_quotes_is_masked_in_the_kept_server_log(tmp_path):
    secret = "revoked-judge-77e1"  # the judge env's error quotes a revoked key
    result = _run("snapshot", TARGET, "--out", str(tmp_path), "--secret", f"JUDGE_API_KEY={secret}")
    assert result.returncode == 2 and secret not in result.stderr, result.stderr
    log = Path(result.stderr.rsplit("(server log: ", 1)[1].removesuffix(")\n"))
    mode, text = log.stat().st_mode & 0o777, log.read_text()
    log.unlink()
    assert "PermissionError: the judge refused the key ***" in text and secret not in text
    assert mode == 0o600


@pytest.mark.slow
def test_with_secret_from_the_environment_the_task_only_tool_is_found(tmp_path):
    result = _run("snapshot", TARGET, "--secret", "JUDGE_API_KEY", "--out", str(tmp_path), JUDGE_API_KEY=KEY)
    assert result.returncode == 0, result.stderr
    snapshot = json.loads((tmp_path / "judged.snapshot.json").read_text())
    assert {tool["name"]: tool["shared"] for tool in snapshot["tools"]} == {"answer": True, "whoami": False}
    assert snapshot["secret_names"] == ["JUDGE_API_KEY"]
    assert KEY not in _files_text(tmp_path) and KEY not in result.stdout + result.stderr
    assert (
        result.stdout.splitlines()[0]
        == f"wrote {tmp_path / 'judged.snapshot.json'} (2 tools; tasks stored: train 12/12)"
    )


def test_secret_given_with_its_value_and_probes_zero(judged_url, tmp_path):
    given = invoke(
        "snapshot", judged_url, "--secret", f"JUDGE_API_KEY={KEY}", "--no-generate", "--out", str(tmp_path / "a")
    )
    assert given.exit_code == 0, given.output
    assert "whoami" in (tmp_path / "a" / "judged.snapshot.json").read_text()
    assert KEY not in _files_text(tmp_path / "a") and KEY not in given.output

    # --probes 0 works without the secret, and gives up the task-only tool
    skipped = invoke("snapshot", judged_url, "--probes", "0", "--no-generate", "--out", str(tmp_path / "b"))
    assert skipped.exit_code == 0, skipped.output
    assert "whoami" not in (tmp_path / "b" / "judged.snapshot.json").read_text()


def test_a_secret_the_server_quotes_back_is_masked_in_the_message(judged_url, tmp_path):
    revoked = "revoked-7d1c9e"
    result = invoke("snapshot", judged_url, "--secret", f"JUDGE_API_KEY={revoked}", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert "the server answered 500: PermissionError: the judge refused the key ***" in result.stderr
    assert revoked not in result.output and "secrets sent: JUDGE_API_KEY). Check their values;" in result.stderr
    assert "pass it with --secret" not in result.stderr, "the advice repeats what was done"
    assert "--probes 0, which captures no task-only tools (keep --secret: the snapshot records" in result.stderr


def test_a_secret_given_is_recorded_with_probes_zero(judged_url, tmp_path):
    """The way out of a failing probe keeps the secret: no session is opened, yet its name is
    recorded and the generated adapter forwards it."""
    result = invoke("snapshot", judged_url, "--probes", "0", "--secret", f"JUDGE_API_KEY={KEY}", "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "judged.snapshot.json").read_text())["secret_names"] == ["JUDGE_API_KEY"]
    assert '    secret_names=("JUDGE_API_KEY",),\n' in (tmp_path / "judged.py").read_text()
    assert KEY not in _files_text(tmp_path)


def test_a_secret_named_but_not_set_is_one_line(judged_url, tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGE_API_KEY", raising=False)
    result = invoke("snapshot", judged_url, "--secret", "JUDGE_API_KEY", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == "orlgen: error: secret JUDGE_API_KEY: the environment variable JUDGE_API_KEY is not set\n"


@pytest.mark.slow
def test_sync_reads_secret_names_from_the_config(judged_url, tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.orlgen]\nout = 'gen'\n\n[[tool.orlgen.envs]]\ntarget = '{judged_url}'\nsecrets = ['JUDGE_API_KEY']\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_API_KEY", KEY)
    result = invoke("sync")
    assert result.exit_code == 0, result.output
    assert "whoami" in (tmp_path / "gen" / "judged.snapshot.json").read_text()
    assert '    secret_names=("JUDGE_API_KEY",),\n' in (tmp_path / "gen" / "judged.py").read_text()
    assert KEY not in _files_text(tmp_path / "gen")


def test_a_config_secret_must_be_a_name_not_a_value(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[[tool.orlgen.envs]]\ntarget = 'a:B'\nsecrets = ['sk-live-123=x']\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("sync")
    assert result.exit_code == 2
    assert "envs.0.secrets" in result.stderr and "is not a secret name" in result.stderr


# --------------------------------------------------------------------------------------------
# the generated adapter: default secrets from the environment, and which key wins
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def judged_module(judged_url, tmp_path_factory):
    out = tmp_path_factory.mktemp("judged")
    os.environ["JUDGE_API_KEY"] = KEY
    try:
        result = invoke("snapshot", judged_url, "--secret", "JUDGE_API_KEY", "--out", str(out))
    finally:
        del os.environ["JUDGE_API_KEY"]
    assert result.exit_code == 0, result.output
    return load_module(out / "judged.py")


def _session_secrets(module, **options) -> dict:
    """What the server received as the session's secrets (reported by its `whoami` tool, read
    from the session itself: what reaches the model has the secret values masked)."""
    adapter = module.JudgedEnv(**options)
    adapter.reset(task_index=0)
    assert adapter.outcome == "running", adapter.error
    session = adapter._episode._session
    output = adapter._episode.connection.run(lambda client: session.call_tool("whoami", {}), 30)
    return json.loads(output.blocks[0].text)


def test_the_adapter_forwards_the_named_secrets_from_the_environment(judged_module, judged_url, monkeypatch):
    monkeypatch.delenv("OPENREWARD_API_KEY", raising=False)
    monkeypatch.setenv("JUDGE_API_KEY", "from-env")
    assert _session_secrets(judged_module, base_url=judged_url)["JUDGE_API_KEY"] == "from-env"
    # read at each reset, not at import or construction
    adapter = judged_module.JudgedEnv(base_url=judged_url)
    monkeypatch.delenv("JUDGE_API_KEY")
    adapter.reset(task_index=1)
    assert adapter.outcome == "env_error" and "JUDGE_API_KEY is required" in adapter.error
    # explicit secrets= replace the default, even when the variable is set
    monkeypatch.setenv("JUDGE_API_KEY", "from-env")
    assert (
        _session_secrets(judged_module, base_url=judged_url, secrets={"JUDGE_API_KEY": "given"})["JUDGE_API_KEY"]
        == "given"
    )


def test_a_recorded_secret_the_process_lacks_is_named_once_when_the_first_adapter_is_built(
    judged_module, judged_url, monkeypatch, caplog
):
    module = load_module(Path(judged_module.__file__))  # a fresh class: the warning is once per class
    monkeypatch.delenv("JUDGE_API_KEY", raising=False)
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        module.JudgedEnv(base_url=judged_url)
        module.JudgedEnv(base_url=judged_url)
    assert [record.getMessage() for record in caplog.records] == [
        "JudgedEnv: the snapshot records the secret(s) JUDGE_API_KEY, but no such environment variable is set: "
        "every session opens without it (set JUDGE_API_KEY, or pass secrets={...} to the adapter)"
    ]
    caplog.clear()
    monkeypatch.setenv("JUDGE_API_KEY", "from-env")  # set, or given as secrets=: nothing to say
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        load_module(Path(judged_module.__file__)).JudgedEnv(base_url=judged_url)
        monkeypatch.delenv("JUDGE_API_KEY")
        load_module(Path(judged_module.__file__)).JudgedEnv(base_url=judged_url, secrets={"JUDGE_API_KEY": "given"})
    assert caplog.records == []


# (target kind, api_key=, secrets= key entries, OPENREWARD_API_KEY variable) → the key the session
# and every request receive (None: no key at all). The variable is the platform's key: only a
# catalog target falls back to it; a URL target gets a key only when one is given explicitly.
PRECEDENCE = [
    ("url", "A", {}, None, "A"),
    ("url", None, {"api_key": "S"}, None, "S"),
    ("url", None, {"OPENREWARD_API_KEY": "S"}, None, "S"),
    ("url", "A", {"api_key": "S"}, None, "A"),
    ("url", None, {}, "E", None),
    ("url", None, {"api_key": "S"}, "E", "S"),
    ("url", "A", {}, "E", "A"),
    ("catalog", None, {}, "E", "E"),
    ("catalog", None, {"api_key": "S"}, "E", "S"),
    ("catalog", "A", {}, "E", "A"),
]


@pytest.mark.parametrize(("kind", "api_key", "key_secrets", "env_key", "expected"), PRECEDENCE)
def test_api_key_precedence(
    judged_module, judged_url, header_log, monkeypatch, kind, api_key, key_secrets, env_key, expected
):
    if env_key is None:
        monkeypatch.delenv("OPENREWARD_API_KEY", raising=False)
    else:
        monkeypatch.setenv("OPENREWARD_API_KEY", env_key)
    options = {"api_key": api_key, "secrets": {"JUDGE_API_KEY": KEY, **key_secrets}}
    if kind == "url":
        module, options["base_url"] = judged_module, judged_url
    else:  # the same env as a catalog target, the SDK's platform host pointed at the loopback server
        monkeypatch.setenv("OPENREWARD_SESSION_URL", judged_url)
        module = type("CatalogModule", (), {"JudgedEnv": _catalog_class(judged_module.JudgedEnv)})
    recorded(header_log)
    received = _session_secrets(module, **options)
    assert (received.get("api_key"), received.get("OPENREWARD_API_KEY")) == (expected, expected)
    assert received["JUDGE_API_KEY"] == KEY
    requests = recorded(header_log)
    assert requests and {r["x-api-key"] for r in requests} == {expected}, requests
    assert {r["authorization"] for r in requests} == {None}


def _catalog_class(env_class: type) -> type:
    """The judged adapter as if captured from the catalog name `Acme/judged`."""
    catalog = Target(kind="catalog", value="Acme/judged", env="judged")
    return type("JudgedEnv", (env_class,), {}, spec=dataclasses.replace(env_class.spec, target=catalog))


@pytest.mark.slow
def test_snapshot_check_captures_with_the_recorded_secrets(tmp_path):
    """`snapshot --check` repeats the capture: the secret names the snapshot recorded, read from
    the environment (its probes fail without them); the module's hint is that exact command."""
    out = str(tmp_path)
    assert _run("snapshot", TARGET, "--secret", "JUDGE_API_KEY", "--out", out, JUDGE_API_KEY=KEY).returncode == 0
    checked = _run("snapshot", TARGET, "--check", "--out", out, JUDGE_API_KEY=KEY)
    assert checked.returncode == 0, checked.stderr
    assert "the live environment matches the snapshot" in checked.stdout
    unset = _run("snapshot", TARGET, "--check", "--out", out)
    assert unset.returncode == 2
    assert unset.stderr == (
        "orlgen: error: judged.snapshot.json was captured with --secret JUDGE_API_KEY: set the environment "
        "variable JUDGE_API_KEY (or pass --secret JUDGE_API_KEY=VALUE) to capture it the same way\n"
    )
    module = (tmp_path / "judged.py").read_text()
    assert f"re-capture with `orlgen snapshot {TARGET} --secret JUDGE_API_KEY`." in module
