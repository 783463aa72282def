"""[tool.orlgen] config, `orlgen sync`, `snapshot --check`, and template overrides."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner
from conftest import REPO
from orlgen.cli import main
from orlgen.config import ConfigFileError, load_config
from orlgen.files import write_files
from orlgen.snapshot import load


def write_project(path, table: str) -> None:
    (path / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n{table}\n")


def test_defaults_without_a_table(tmp_path):
    write_project(tmp_path, "")
    config = load_config(tmp_path)
    assert config.out == tmp_path / "generated" and config.templates is None and config.envs == ()


def test_unknown_keys_are_errors(tmp_path):
    write_project(tmp_path, "[tool.orlgen]\nout = 'gen'\noutput = 'typo'\n")
    with pytest.raises(ConfigFileError, match=r"\[tool.orlgen\] output: Extra inputs are not permitted"):
        load_config(tmp_path)
    write_project(tmp_path, "[[tool.orlgen.envs]]\ntarget = 'a:B'\nsplit = 'train'\n")
    with pytest.raises(ConfigFileError, match=r"envs.0.split"):
        load_config(tmp_path)


def test_cli_reports_a_bad_config_in_one_line(tmp_path, monkeypatch):
    write_project(tmp_path, "[tool.orlgen]\nbogus = 1\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check"])
    assert result.exit_code == 2
    assert result.stderr.startswith("orlgen: error: pyproject.toml: [tool.orlgen] bogus")


def test_sync_snapshots_and_generates_every_listed_env(tmp_path, monkeypatch, echo_url):
    write_project(
        tmp_path,
        f"[tool.orlgen]\nout = 'gen'\n\n[[tool.orlgen.envs]]\ntarget = '{echo_url}'\nname = 'echo_live'\n"
        "probes = 2\n\n[[tool.orlgen.envs]]\ntarget = 'tests.recording_env:Recording'\ntasks = 'none'\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    runner = CliRunner()
    assert runner.invoke(main, ["sync"]).exit_code == 0
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == [
        "echo_live.py",
        "echo_live.snapshot.json",
        "echo_live.tasks.jsonl",
        "recording.py",
        "recording.snapshot.json",  # --tasks none: no tasks file
    ]
    assert load(tmp_path / "gen" / "recording.snapshot.json").tasks["train"].coverage == "none"
    assert len(load(tmp_path / "gen" / "echo_live.snapshot.json").probed_tasks) == 2
    assert runner.invoke(main, ["check"]).exit_code == 0  # `check` with no argument uses `out`


def test_snapshot_check_reports_live_drift(tmp_path, echo_url):
    runner = CliRunner()
    out = str(tmp_path)
    assert runner.invoke(main, ["snapshot", echo_url, "--out", out]).exit_code == 0
    same = runner.invoke(main, ["snapshot", echo_url, "--out", out, "--check"])
    assert same.exit_code == 0 and "matches the snapshot" in same.stdout
    path = tmp_path / "echo.snapshot.json"
    snapshot = load(path)
    edited = snapshot.model_copy(update={"tools": [t for t in snapshot.tools if t.name != "hint"]})
    write_files(edited.canonical().files(path))
    before = path.read_bytes()
    drift = runner.invoke(main, ["snapshot", echo_url, "--out", out, "--check"])
    assert drift.exit_code == 1 and drift.stdout.startswith("TOOL_ADDED")
    assert path.read_bytes() == before  # --check writes nothing


def test_a_project_template_overrides_one_packaged_template(tmp_path, monkeypatch):
    shutil.copytree(REPO / "generated", tmp_path / "generated")
    (tmp_path / "templates").mkdir()
    method = (REPO / "templates" / "tool_method.py.jinja").read_text()
    (tmp_path / "templates" / "tool_method.py.jinja").write_text(
        method.replace(
            "        {{ tool.docstring }}\n", "        {{ tool.docstring }}\n        # reviewed tool {{ tool.wire }}\n"
        )
    )
    write_project(tmp_path, "[tool.orlgen]\ntemplates = 'templates'\n")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    stale = runner.invoke(main, ["check"])
    assert stale.exit_code == 1 and "rendered with other templates" in stale.stdout
    assert runner.invoke(main, ["generate"]).exit_code == 0
    text = (tmp_path / "generated" / "echo.py").read_text()
    assert "        # reviewed tool 'echo'\n" in text and "# reviewed tool 'hint'" in text
    assert "class EchoEnv(EnvAdapter):" in text  # the rest still comes from the packaged module template
    assert runner.invoke(main, ["check"]).exit_code == 0
