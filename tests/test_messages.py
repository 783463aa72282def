"""Messages that say the fix: for a hand-edited snapshot, a concise `sync`, plurals."""

from __future__ import annotations

import json
import shutil

import pytest
from orlgen.capture.live import summary
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import REPO


def test_a_hand_edited_snapshot_is_to_be_recaptured_not_regenerated(tmp_path):
    gen = tmp_path / "generated"
    shutil.copytree(REPO / "generated", gen)
    path = gen / "echo.snapshot.json"
    data = json.loads(path.read_text())
    data["tools"][0]["description"] = "Edited by hand."
    path.write_text(json.dumps(data))
    checked = invoke("check", str(gen))
    assert checked.exit_code == 1
    assert checked.stderr.strip().splitlines() == [
        "1 snapshot(s) invalid: re-capture with `orlgen snapshot` (the exact command is in the module's "
        "docstring), or restore the file from version control"
    ]
    assert invoke("generate", str(gen)).exit_code == 2  # the advice not given: it fails too


def test_one_tool_is_one_tool():
    snapshot = load(REPO / "generated" / "echo.snapshot.json")
    one = snapshot.model_copy(update={"tools": snapshot.tools[:1]})
    assert summary(one).startswith("1 tool; ")
    assert summary(snapshot).startswith("2 tools; ")


@pytest.mark.slow
def test_sync_says_one_line_per_env_when_nothing_changed(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        "[tool.orlgen]\nout = 'gen'\n\n"
        + "".join(
            f"[[tool.orlgen.envs]]\ntarget = '{target}'\n\n"
            for target in (
                "examples.echo:Echo",
                "tests.support.envs.recording:Recording",
                "tests.support.envs.counting:Counting",
            )
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    first = invoke("sync")
    assert first.exit_code == 0, first.output
    assert len(first.stdout.splitlines()) == 7  # each env: its snapshot, its module; the directory's orlgen.lock
    again = invoke("sync")
    assert [line.split(" ", 2)[:2] for line in again.stdout.splitlines()] == [
        ["unchanged", "gen/echo.snapshot.json"],
        ["unchanged", "gen/recording.snapshot.json"],
        ["unchanged", "gen/counting.snapshot.json"],
    ]
