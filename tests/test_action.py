"""The GitHub Action (action.yml, its logic in action/review.py), run as GitHub runs its review
step: the step's `run` script read from action.yml, its `env:` expressions resolved to what a
pull_request event gives them, in bash, in a throwaway git repository with a base and a head
commit. Nothing is installed: `$RUNNER_TEMP/orlgen-venv/bin`, where the action's install step
puts orlgen, is the scripts directory of this environment's installed `orlgen` (tests/support/cli).
No network: the base commit is in the repository, so the script fetches nothing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from orlgen.review.files import write_files
from orlgen.snapshot.model import load

from tests.support.cli import orlgen_script, run_orlgen
from tests.support.modules import REPO
from tests.test_diff import edited

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
SNAPSHOT = "generated/echo.snapshot.json"
# Every expression the review step's env and working directory use, as a pull_request event sets them.
BASE_EXPRESSION = "${{ github.event_name == 'pull_request' && github.event.pull_request.base.sha || '' }}"


def _git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run(["git", *identity, *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def _generate(repo: Path) -> None:
    generated = run_orlgen("generate", cwd=repo, env=_env(repo.parent))
    assert generated.returncode == 0, generated.stderr


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "--all")
    _git(repo, "commit", "--quiet", "-m", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def _env(tmp: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("GITHUB_", "ORLGEN_"))}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # the verdict cache of this test alone
    return env


@pytest.fixture
def repo(tmp_path) -> Path:
    """A project with the echo env's snapshot and its module rendered by this orlgen, committed
    as the pull request's base."""
    repo = tmp_path / "repo"
    (repo / "generated").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[tool.orlgen]\nout = "generated"\n', encoding="utf-8")
    write_files(load(REPO / SNAPSHOT).files(repo / SNAPSHOT))
    _generate(repo)
    _git(repo, "init", "--quiet", "--initial-branch=main")
    _commit(repo, "base")
    return repo


def _pull_request(repo: Path, edit) -> str:
    """The head commit: the snapshot changed by `edit(data)` and its module regenerated; the base's sha."""
    base = _git(repo, "rev-parse", "HEAD").strip()
    write_files(edited(load(repo / SNAPSHOT), edit).files(repo / SNAPSHOT))
    _generate(repo)
    _commit(repo, "head")
    return base


def _review_step() -> dict:
    (step,) = [step for step in ACTION["runs"]["steps"] if step.get("name") == "orlgen check and diff"]
    return step


def run_action(repo: Path, base: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """The review step as the runner runs it (`bash -eo pipefail`): its stdout (workflow commands
    and the logs) and the job summary it wrote."""
    tmp = repo.parent
    runner_temp = tmp / "runner"
    (runner_temp / "orlgen-venv").mkdir(parents=True, exist_ok=True)
    bin_link = runner_temp / "orlgen-venv" / "bin"
    if not bin_link.exists():
        bin_link.symlink_to(orlgen_script().parent)
    summary = tmp / "summary.md"
    summary.write_text("", encoding="utf-8")
    step = _review_step()
    values = {BASE_EXPRESSION: base, "${{ github.action_path }}": str(REPO), "${{ inputs.working-directory }}": "."}
    env = {**_env(tmp), "RUNNER_TEMP": str(runner_temp), "GITHUB_STEP_SUMMARY": str(summary)}
    env.update({name: values[expression] for name, expression in step["env"].items()})
    cwd = repo / values[step["working-directory"]]
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return result, summary.read_text(encoding="utf-8")


def _tool(data: dict, name: str) -> dict:
    return next(tool for tool in data["tools"] if tool["name"] == name)


@pytest.mark.slow
def test_a_breaking_change_is_an_error_annotation_on_the_snapshot_and_fails(repo):
    base = _pull_request(repo, lambda data: data.update(tools=[t for t in data["tools"] if t["name"] != "hint"]))

    result, summary = run_action(repo, base)

    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and errors[0].startswith(f"::error file={SNAPSHOT},title=orlgen TOOL_REMOVED::hint: ")
    assert "`orlgen check`: every generated file is current." in summary
    assert f"#### {SNAPSHOT.replace('_', chr(92) + '_')}: breaking" in summary
    assert "| ⚠️ breaking | `TOOL_REMOVED` | CALL |" in summary


@pytest.mark.slow
def test_a_prompt_only_change_is_a_summary_line_and_passes(repo):
    base = _pull_request(repo, lambda data: _tool(data, "echo").update(description="Say the target string back."))

    result, summary = run_action(repo, base)

    assert result.returncode == 0, result.stderr
    commands = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert len(commands) == 1
    assert commands[0].startswith(f"::notice file={SNAPSHOT},title=orlgen TOOL_DESCRIPTION_CHANGED::echo: ")
    assert f"#### {SNAPSHOT.replace('_', chr(92) + '_')}: not breaking" in summary
    assert "**1 change(s), 0 breaking**" in summary


@pytest.mark.slow
def test_without_a_pull_request_only_check_runs_and_a_stale_module_fails(repo):
    (repo / "generated" / "echo.py").write_text("# edited by hand\n", encoding="utf-8")

    result, summary = run_action(repo, "")

    assert result.returncode == 1
    (error,) = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert error.startswith("::error title=orlgen check::")
    assert "`orlgen check` failed (exit 1):" in summary and "Environment changes" not in summary


@pytest.mark.slow
def test_a_base_commit_missing_from_the_checkout_stops_in_one_line(repo):
    missing = "0" * 40  # no `origin` to fetch it from: the fetch fails quietly, the check says so

    result, summary = run_action(repo, missing)

    assert result.returncode == 2
    assert f"::error title=orlgen diff::base commit {missing} is not in this checkout" in result.stdout
    assert "is not in this checkout: no diff." in summary


def test_paths_cannot_add_properties_markup_or_commands():
    """Fault injection on the escaping alone: a file name from a pull request carrying a workflow
    command's separators and Markdown's link syntax."""
    spec = importlib.util.spec_from_file_location("review", REPO / "action" / "review.py")
    assert spec is not None and spec.loader is not None
    review = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(review)
    assert review._property("a,title=x::y\n::error::z.snapshot.json") == (
        "a%2Ctitle=x%3A%3Ay%0A%3A%3Aerror%3A%3Az.snapshot.json"
    )
    assert review._markdown("[x](http://e)<b>|`\u202e") == "\\[x\\]\\(http://e\\)\\<b\\>\\|\\`\\u202e"
    assert review._fenced(["````"]) == ["`````text", "````", "`````"]
