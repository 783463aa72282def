"""Secrets reach a verifiers module's tool server whatever their names, and a tool server that
could not import its module fails the rollout in one line.

verifiers 0.4's subprocess runtime starts each tool server without the host's variables named
`*API_KEY*`; the host hands them over in a private file (`orlgen.runtime.child_secrets`). The
file's mechanics are checked here in this venv; the whole path with real `vf-eval` (in its own
venv, `tests/support/framework_venvs.py`) against the keyed env (`tests/support/envs/keyed.py`,
whose session cannot open without `JUDGE_API_KEY`), served by the openreward SDK's server on
loopback with the counting middleware, the model being the scripted endpoint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from orlgen.capture.live import capture
from orlgen.capture.options import CaptureOptions
from orlgen.review.files import write_files

from tests.support.modules import REPO
from tests.support.servers.both import BothServer
from tests.support.verifiers_eval import vf_eval

KEY = "sk-judge-5f1c2e9a7b3d"  # JUDGE_API_KEY's value: found nowhere a run writes or prints
COUNTING = ("tests.support.servers.capacity:Faults",)


def _child(code: str, env: dict[str, str]) -> str:
    """What `code` prints in a fresh interpreter with `env` added (and this repository importable)."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, check=True).stdout


WRITE = "from orlgen.runtime import child_secrets; print(child_secrets.write(['JUDGE_API_KEY', 'UNSET_ONE']))"


def test_the_file_is_private_restores_the_set_names_and_goes_with_its_writer(tmp_path):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    code = WRITE + "; import os, stat, sys; p = child_secrets.write(['JUDGE_API_KEY']); "
    code += "print(oct(stat.S_IMODE(os.stat(p).st_mode)), oct(stat.S_IMODE(os.stat(os.path.dirname(p)).st_mode)))"
    code += "; print(open(p).read())"
    first, modes, text = _child(code, {"JUDGE_API_KEY": KEY, "XDG_RUNTIME_DIR": str(run)}).splitlines()

    assert modes == "0o600 0o700"
    assert json.loads(text) == {"JUDGE_API_KEY": KEY}  # a name that is not set is not written
    assert Path(first).parent.parent == run  # the second ask, of the same values, read the same file
    assert list(run.iterdir()) == []  # the directory went when its writer exited

    # a reader gets them back into its environment; a file that is gone restores nothing
    kept = tmp_path / "kept.json"
    kept.write_text(json.dumps({"JUDGE_API_KEY": KEY}))
    read = "import os; from orlgen.runtime import child_secrets as c; print(c.restore({!r}), os.environ.get('JUDGE_API_KEY'))"
    assert _child(read.format(str(kept)), {}).strip() == f"['JUDGE_API_KEY'] {KEY}"
    assert _child(read.format(str(tmp_path / "gone.json")), {}).strip() == "[] None"


def test_nothing_is_written_when_no_named_variable_is_set(tmp_path):
    assert _child(WRITE, {"XDG_RUNTIME_DIR": str(tmp_path)}).strip() == "None"
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def keyed():
    with BothServer("openreward-sdk", middleware=COUNTING, spec="tests.support.envs.keyed:Keyed") as server:
        yield server


@pytest.fixture(scope="module")
def keyed_dir(keyed, tmp_path_factory):
    """The keyed env captured from its server (with the secret: the snapshot records its name) and
    its verifiers module, in one dir."""
    from bench.trainers import render_verifiers

    out = tmp_path_factory.mktemp("keyed_verifiers")
    snapshot = capture(keyed.url, CaptureOptions(secrets={"JUDGE_API_KEY": KEY}))
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    assert render_verifiers(path, out) == "keyed_verifiers"
    assert KEY not in "".join(p.read_text() for p in out.iterdir())
    return out


def _stats(server) -> dict:
    return json.loads(urllib.request.urlopen(server.url + "/_stats", timeout=10).read())


def _created(server, before: dict) -> tuple[int, int, int]:
    now = _stats(server)
    return now["created"] - before["created"], now["deleted"] - before["deleted"], now["open"]


def _files_holding(root: Path, value: str) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and value.encode() in p.read_bytes())


@pytest.mark.slow
def test_a_secret_named_like_an_api_key_reaches_the_session_and_nothing_written(keyed, keyed_dir, tmp_path):
    run = tmp_path / "run"  # where the host's secrets file lives (its XDG_RUNTIME_DIR)
    run.mkdir(mode=0o700)
    env = {"ORLGEN_KEYED_URL": keyed.url, "JUDGE_API_KEY": KEY, "XDG_RUNTIME_DIR": str(run)}
    before = _stats(keyed)
    evaluated = vf_eval("keyed_verifiers", keyed_dir, tmp_path / "eval", env)

    (trace,) = evaluated.traces
    assert trace["errors"] == [] and trace["stop_condition"] == "finished"
    assert trace["rewards"]["env_reward"]["score"] == 1.0
    assert trace["metrics"]["scored"] == 1.0 and trace["metrics"]["env_error"] == 0.0
    assert _created(keyed, before) == (1, 1, 0)

    # the key quoted by the env reached the model masked; it is in no output, log or results file
    said = [m["content"] for r in evaluated.requests for m in r["messages"] if m["role"] == "tool"]
    assert any("key ***" in str(content) for content in said), said
    assert KEY not in evaluated.stdout and KEY not in evaluated.stderr
    assert _files_holding(tmp_path, KEY) == []
    assert list(run.iterdir()) == []  # the secrets file went with the vf-eval process


@pytest.mark.slow
def test_a_relative_pythonpath_fails_the_rollout_in_one_line_before_any_tool_server(keyed, keyed_dir, tmp_path):
    """vf-eval finds the module through `gen` from its own directory; the tool server would start
    in verifiers' and wait three minutes for a port. The rollout fails in task setup instead: the
    error is orlgen's line, not verifiers' port timeout, and no session was ever opened."""
    work = tmp_path / "eval"
    work.mkdir()
    (work / "gen").symlink_to(keyed_dir, target_is_directory=True)
    before = _stats(keyed)
    evaluated = vf_eval("keyed_verifiers", Path("gen"), work, {"ORLGEN_KEYED_URL": keyed.url})

    (trace,) = evaluated.traces
    (error,) = trace["errors"]
    text = json.dumps(error)
    assert "did not report its port" not in text and "not serving" not in text
    assert error["type"] == "TaskError"  # verifiers' name for a failed task setup
    message = error["message"]
    assert "\n" not in message
    assert message.startswith("task setup: ModuleNotFoundError: keyed_verifiers: verifiers starts this rollout's")
    assert "tool server as `python -m keyed_verifiers`" in message
    assert "(PYTHONPATH names its directory as 'gen')" in message and f"(PYTHONPATH={work / 'gen'})" in message
    assert "PYTHONPATH must name its directory by an absolute path" in message
    assert _created(keyed, before) == (0, 0, 0)
