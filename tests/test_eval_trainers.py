"""`orlgen eval` plays TRL's loop (`orlgen.runtime.trl.rollout`): given another trainer's module it
refuses in one line naming why and what to run instead; given a snapshot it plays the env's TRL
module rendered in memory, whichever trainers the project writes modules for.

The installed `orlgen` command in a child process for the refusals (exit code and stderr as a
user sees them); a real echo server and the scripted chat server for the snapshot.
"""

from __future__ import annotations

import json
import shutil

import pytest

from bench.chat_server import ChatServer, serving
from tests.support.cli import invoke, run_orlgen
from tests.support.models.scripted_policy import scripted
from tests.support.modules import REPO

NO_ENDPOINT = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m")  # refused before it is asked anything


@pytest.mark.parametrize(
    ("module", "why"),
    [
        ("helpdesk_verifiers.py", "its rollout loop is vf-eval's"),
        ("helpdesk_skyrl.py", "its rollout loop is SkyRL's"),
        ("helpdesk_models.py", "it holds the env's models, no rollout loop"),
    ],
)
def test_another_trainers_module_is_refused_in_one_line_naming_the_trl_module(module, why):
    result = run_orlgen("eval", f"generated/{module}", *NO_ENDPOINT)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"orlgen: error: generated/{module}: ") and why in line, line
    assert "orlgen eval generated/helpdesk.py" in line and "same env, tools, spec and reward rule" in line, line


def test_a_refused_module_is_never_imported(tmp_path):
    """The refusal reads the header only: the module's code (here a canary after the header) never runs."""
    canary = tmp_path / "canary"
    source = (REPO / "generated" / "helpdesk_skyrl.py").read_text()
    future = "from __future__ import annotations\n"
    module = tmp_path / "helpdesk_skyrl.py"
    module.write_text(source.replace(future, f"{future}open({str(canary)!r}, 'w').close()\n", 1))
    result = invoke("eval", module, *NO_ENDPOINT)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    # No TRL module beside it: the snapshot is what eval renders TRL's module from.
    assert f"orlgen eval {tmp_path / 'helpdesk.snapshot.json'}" in result.stderr, result.stderr
    assert not canary.exists()


@pytest.mark.slow
def test_a_snapshot_rendered_for_other_trainers_is_played_through_its_trl_module(echo_url, tmp_path):
    for name in ("echo.snapshot.json", "echo.tasks.jsonl"):
        shutil.copy(REPO / "generated" / name, tmp_path / name)
    (tmp_path / "pyproject.toml").write_text('[tool.orlgen]\nout = "."\ntrainers = ["verifiers", "skyrl"]\n')
    with serving(ChatServer(scripted)) as chat:
        result = invoke(
            "eval", tmp_path / "echo.snapshot.json", "--base-url", chat.url, "--model", "scripted", "-n", 2,
            "--env-url", echo_url, "--format", "json",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    (split,) = json.loads(result.stdout)["splits"]
    assert (split["env"], split["rollouts"], split["mean_reward"]) == ("echo", 2, 1.0)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "echo.snapshot.json",
        "echo.tasks.jsonl",
        "pyproject.toml",
    ]
