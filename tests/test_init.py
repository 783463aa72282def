"""`orlgen init` (issue 30 item 12): a config, a pre-commit hook and .gitattributes, added to a
repository without changing a line the user wrote; a second run changes nothing."""

from __future__ import annotations

import re
import subprocess
import tomllib

import pytest
import yaml

from tests.support.cli import invoke
from tests.support.modules import REPO

README_HOOK = yaml.safe_load(
    next(b for b in re.findall(r"```yaml\n(.*?)```", (REPO / "README.md").read_text(), re.S) if "repo: local" in b)
)["repos"][0]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def files(repo):
    return {path.name: path.read_bytes() for path in sorted(repo.iterdir()) if path.is_file()}


def test_an_empty_repository_gets_a_config_a_hook_and_attributes(repo):
    result = invoke("init")
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["wrote"] * 3
    assert tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["orlgen"] == {"out": "generated"}
    hooks = yaml.safe_load((repo / ".pre-commit-config.yaml").read_text())["repos"]
    assert hooks == [README_HOOK]  # the hook the README documents
    (repo / "generated").mkdir()
    for name in ("helpdesk.tasks.jsonl", "helpdesk.py", "helpdesk.snapshot.json"):
        (repo / "generated" / name).write_text("x")
    attributes = subprocess.run(
        [
            "git",
            "check-attr",
            "linguist-generated",
            "generated/helpdesk.tasks.jsonl",
            "generated/helpdesk.py",
            "generated/helpdesk.snapshot.json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert attributes == [
        "generated/helpdesk.tasks.jsonl: linguist-generated: true",
        "generated/helpdesk.py: linguist-generated: unspecified",  # modules stay visible for review
        "generated/helpdesk.snapshot.json: linguist-generated: unspecified",
    ]
    before = files(repo)
    again = invoke("init")
    assert again.exit_code == 0 and [line.split()[0] for line in again.stdout.splitlines()] == ["unchanged"] * 3
    assert files(repo) == before


USER_PYPROJECT = '[project]\nname = "mine"  # my comment\n\n[tool.black]\nline-length = 99\n'


@pytest.mark.parametrize("indent", ["  ", ""])
def test_existing_files_are_only_added_to(repo, indent):
    (repo / "pyproject.toml").write_text(USER_PYPROJECT)
    other = f"repos:\n{indent}- repo: https://github.com/psf/black\n{indent}  rev: 24.1.0\n{indent}  hooks:\n{indent}    - id: black\n"
    (repo / ".pre-commit-config.yaml").write_text(f"default_stages: [pre-commit]\n{other}")
    (repo / ".gitattributes").write_text("*.png binary")  # no final newline
    result = invoke("init", "--out", "gen")
    assert result.exit_code == 0, result.output
    assert [line.split()[0] for line in result.stdout.splitlines()] == ["added"] * 3
    pyproject = (repo / "pyproject.toml").read_text()
    assert pyproject.startswith(USER_PYPROJECT)
    assert tomllib.loads(pyproject)["tool"] == {"black": {"line-length": 99}, "orlgen": {"out": "gen"}}
    config = (repo / ".pre-commit-config.yaml").read_text()
    assert config.startswith(f"default_stages: [pre-commit]\n{other}")
    repos = yaml.safe_load(config)["repos"]
    assert repos == [{"repo": "https://github.com/psf/black", "rev": "24.1.0", "hooks": [{"id": "black"}]}, README_HOOK]
    assert (repo / ".gitattributes").read_text() == "*.png binary\n\n*.tasks.jsonl linguist-generated=true\n"


def test_a_users_own_line_for_tasks_files_is_kept(repo):
    (repo / ".gitattributes").write_text("*.tasks.jsonl -diff\n")
    invoke("init")
    assert (repo / ".gitattributes").read_text() == "*.tasks.jsonl -diff\n"


def test_a_file_it_cannot_append_to_is_left_alone_with_a_line_saying_what_to_add(repo):
    text = "tool = { black = { line-length = 99 } }\n"  # an inline table cannot gain [tool.orlgen]
    (repo / "pyproject.toml").write_text(text)
    result = invoke("init")
    assert result.exit_code == 0
    assert (repo / "pyproject.toml").read_text() == text
    assert "skipped pyproject.toml: [tool.orlgen] cannot be appended to it as is; add by hand: [tool.orlgen]" in (
        result.stderr
    )


def test_an_unreadable_file_writes_nothing_at_all(repo):
    (repo / ".pre-commit-config.yaml").write_text("repos: [unclosed\n")
    result = invoke("init")
    assert result.exit_code == 2 and "not valid YAML" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert sorted(path.name for path in repo.iterdir()) == [".git", ".pre-commit-config.yaml"]


@pytest.mark.parametrize("out", ['gen" \nx = "1', "gen\\dir", "générés"])
def test_an_out_that_toml_would_read_otherwise_is_written_as_one_string(repo, out):
    result = invoke("init", "--out", out)
    assert result.exit_code == 0, result.output
    assert tomllib.loads((repo / "pyproject.toml").read_text())["tool"] == {"orlgen": {"out": out}}
