"""The review workflow around `orlgen diff` (issue 30, items 8-10): a project's rules promote or
ignore changes, a Markdown table for a pull request, and a diff of a lone interface file."""

from __future__ import annotations

import json
import shutil

import pytest
from markdown_it import MarkdownIt
from orlgen.review.diff import Change, RuleError, Rules, diff, render
from orlgen.review.files import write_files
from orlgen.snapshot.model import load, tasks_path

from tests.support.cli import invoke
from tests.test_diff import HELPDESK, edited

ADD_TOOL = {"name": "ping", "description": "Check the service.", "input_schema": {"type": "object"}, "shared": True}


def project(tmp_path, rules: str = "", out: str = ".") -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.orlgen]\nout = "{out}"\n{rules}', encoding="utf-8")


def grown(tmp_path):
    """helpdesk as captured (old) and a copy with one more tool and one more training task (new)."""
    old = tmp_path / "old.snapshot.json"
    write_files(load(HELPDESK).files(old))

    def edit(data):
        data["tools"].append(dict(ADD_TOOL))
        next(s for s in data["splits"] if s["name"] == "train")["num_tasks"] += 1

    new = tmp_path / "new.snapshot.json"
    write_files(edited(load(HELPDESK), edit).files(new))
    return old, new


def test_without_rules_a_new_tool_and_a_grown_split_are_not_breaking(tmp_path):
    project(tmp_path)
    old, new = grown(tmp_path)
    result = invoke("diff", old, "--against", new, "--format", "json")
    assert result.exit_code == 0, result.output
    found = {(c["rule"], c["breaking"]) for c in json.loads(result.stdout)["changes"]}
    assert found == {("TOOL_ADDED", False), ("TASK_COUNT_CHANGED", False)}


def test_project_rules_promote_one_rule_and_ignore_another(tmp_path):
    project(tmp_path, '[tool.orlgen.diff]\nbreaking = ["TOOL_ADDED"]\nignore = ["TASK_COUNT_CHANGED"]\n')
    old, new = grown(tmp_path)
    result = invoke("diff", old, "--against", new)
    assert result.exit_code == 1  # a frozen eval suite: a new tool breaks it
    assert result.stdout.startswith("TOOL_ADDED") and "BREAKING" in result.stdout
    assert "TASK_COUNT_CHANGED" not in result.stdout  # a growing env: not reported
    assert result.stderr.strip().splitlines()[-1] == "1 change(s), 1 breaking"


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('ignore = ["TASK_COUNT_CHANGE"]', "unknown rule 'TASK_COUNT_CHANGE' (did you mean TASK_COUNT_CHANGED?)"),
        ('ignore = ["TARGET_CHANGED"]', "TARGET_CHANGED cannot be ignored"),
        ('breaking = ["TOOL_ADDED"]\nignore = ["TOOL_ADDED"]', "TOOL_ADDED is both promoted to breaking and ignored"),
    ],
)
def test_bad_rule_lists_are_refused_in_one_line(tmp_path, table, says):
    project(tmp_path, f"[tool.orlgen.diff]\n{table}\n")
    old, new = grown(tmp_path)
    result = invoke("diff", old, "--against", new)
    assert result.exit_code == 2
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert says in result.stderr and "[tool.orlgen] diff" in result.stderr
    if "unknown" in says:
        assert "TOOL_REMOVED" in result.stderr  # the valid rules are listed


def test_rules_apply_to_changes_without_reordering_them():
    rules = Rules.of(breaking=["TOOL_ADDED"], ignore=["TASKS_CHANGED"])
    changes = [Change("TOOL_ADDED", "a", "new tool"), Change("TASKS_CHANGED", "train", "1 of 2")]
    assert [(c.rule, c.breaking, c.category) for c in rules.applied(changes)] == [("TOOL_ADDED", True, "PROMPT")]
    with pytest.raises(RuleError):
        Rules.of(breaking=["NOT_A_RULE"])


def cells(markdown: str) -> list[list[str]]:
    """The table's body cells as a CommonMark/GFM renderer sees them (markdown-it with tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    rows, row, inside = [], None, False
    for token in tokens:
        if token.type == "tbody_open":
            inside = True
        elif inside and token.type == "tr_open":
            row = []
        elif inside and token.type == "inline" and row is not None:
            row.append(token.content)
        elif inside and token.type == "tr_close":
            rows.append(row)
    return rows


def test_markdown_lists_breaking_changes_first_in_a_table():
    changes = [
        Change("TOOL_ADDED", "ping", "new tool"),
        Change("TOOL_REMOVED", "echo", "the tool is gone"),
        Change("TASK_COUNT_CHANGED", "train", "300 → 301 tasks"),
    ]
    markdown = render(changes, "markdown")
    assert markdown.splitlines()[0] == "**3 change(s), 1 breaking**"
    rows = cells(markdown)
    assert [row[1] for row in rows] == ["`TOOL_REMOVED`", "`TOOL_ADDED`", "`TASK_COUNT_CHANGED`"]
    assert rows[0][0] == "⚠️ breaking" and rows[1][0] == ""
    assert render([], "markdown") == "No changes to the environment's surface.\n"


def test_server_names_cannot_break_the_table_or_inject_markup():
    hostile = "a|b\n| x | y |<img src=x onerror=alert(1)>[click](http://example.invalid)`code`"
    markdown = render([Change("TOOL_ADDED", hostile, "new *tool*")], "markdown")
    html = MarkdownIt("commonmark").enable("table").render(markdown)
    assert "<img" not in html and "<a " not in html and "<code>code" not in html and "<em>" not in html
    rows = cells(markdown)
    assert len(rows) == 1 and len(rows[0]) == 5  # one row, five cells: no cell was ended early


def test_a_lone_interface_file_diffs_its_surface_and_says_tasks_were_not_compared(tmp_path):
    project(tmp_path)
    old, new = grown(tmp_path)
    tasks_path(old).unlink()  # `git show HEAD:generated/x.snapshot.json > old.snapshot.json`
    result = invoke("diff", old, "--against", new)
    assert result.exit_code == 0, result.output
    assert {line.split()[0] for line in result.stdout.splitlines()} == {"TOOL_ADDED", "TASK_COUNT_CHANGED"}
    assert f"orlgen: note: stored tasks not compared: {tasks_path(old)} is absent" in result.stderr


def test_with_both_tasks_files_stored_tasks_are_compared(tmp_path):
    project(tmp_path)
    old = tmp_path / "old.snapshot.json"
    write_files(load(HELPDESK).files(old))

    def edit(data):
        data["tasks"]["train"]["tasks"][3]["spec"]["message"] += " (edited)"

    new = tmp_path / "new.snapshot.json"
    write_files(edited(load(HELPDESK), edit).files(new))
    result = invoke("diff", old, "--against", new)
    assert result.stdout.startswith("TASKS_CHANGED") and "note" not in result.stderr
    shutil.copy(new, tmp_path / "lone.snapshot.json")  # the same interface, without its tasks file
    lone = invoke("diff", old, "--against", tmp_path / "lone.snapshot.json")
    assert lone.exit_code == 0 and lone.stdout == "" and "stored tasks not compared" in lone.stderr


def test_snapshot_diff_library_call_takes_the_rules():
    before = load(HELPDESK)
    after = edited(before, lambda data: data["tools"].append(dict(ADD_TOOL)))
    assert [c.breaking for c in diff(before, after)] == [False]
    assert [c.breaking for c in diff(before, after, rules=Rules.of(breaking=["TOOL_ADDED"]))] == [True]


@pytest.mark.slow
def test_snapshot_check_reports_only_what_the_project_rules_report(tmp_path, echo_url):
    out = tmp_path / "generated"
    project(tmp_path, out="generated")
    assert invoke("snapshot", echo_url, "--out", out).exit_code == 0
    path = out / "echo.snapshot.json"
    snapshot = load(path)
    write_files(snapshot.model_copy(update={"tools": snapshot.tools[:-1]}).canonical().files(path))
    drift = invoke("snapshot", echo_url, "--out", out, "--check")
    assert drift.exit_code == 1 and drift.stdout.startswith("TOOL_ADDED")
    project(tmp_path, '[tool.orlgen.diff]\nignore = ["TOOL_ADDED"]\n', out="generated")
    ignored = invoke("snapshot", echo_url, "--out", out, "--check")
    assert ignored.exit_code == 0 and "matches the snapshot" in ignored.stdout, ignored.output
