"""`orlgen diff`: every change classified by a named rule; breaking ones exit 1."""

from __future__ import annotations

import copy
import json

import pytest
from orlgen.review.diff import RULES, Change, diff, render
from orlgen.review.files import write_files
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import REPO

HELPDESK = REPO / "generated" / "helpdesk.snapshot.json"


def edited(snapshot, edit):
    """A copy of `snapshot` whose JSON was changed by `edit(data)`."""
    data = copy.deepcopy(snapshot.model_dump(mode="json"))
    edit(data)
    return type(snapshot).model_validate(data).canonical()


def tool(data, name):
    return next(t for t in data["tools"] if t["name"] == name)


def rules(changes):
    return {(c.rule, c.subject) for c in changes}


def test_identical_snapshots_have_no_changes():
    snapshot = load(HELPDESK)
    assert diff(snapshot, snapshot) == []


def test_call_breaking_changes():
    old = load(HELPDESK)

    def edit(data):
        data["tools"] = [t for t in data["tools"] if t["name"] != "cancel_order"]
        search = tool(data, "search_orders")["input_schema"]
        search["required"].append("limit")
        search["properties"]["status"]["anyOf"][0]["enum"].remove("cancelled")
        search["properties"]["limit"]["maximum"] = 20
        refund = tool(data, "issue_refund")["input_schema"]
        del refund["properties"]["note"]
        refund["properties"]["order_id"]["type"] = "integer"
        tool(data, "get_order")["input_schema"]["properties"]["verbose"] = {"type": "boolean"}
        tool(data, "get_order")["input_schema"]["required"].append("verbose")

    changes = diff(old, edited(old, edit))
    assert {
        ("TOOL_REMOVED", "cancel_order"),
        ("PARAM_BECAME_REQUIRED", "search_orders.limit"),
        ("ENUM_VALUE_REMOVED", "search_orders.status"),
        ("CONSTRAINT_TIGHTENED", "search_orders.limit"),
        ("PARAM_REMOVED", "issue_refund.note"),
        ("TYPE_CHANGED", "issue_refund.order_id"),
        ("REQUIRED_PARAM_ADDED", "get_order.verbose"),
    } <= rules(changes)
    assert all(c.breaking for c in changes if c.category == "CALL")


def test_nested_and_referenced_changes_are_found():
    old = load(HELPDESK)

    def edit(data):
        defs = tool(data, "update_shipping")["input_schema"]["$defs"]
        defs["Country"]["enum"].append("ES")
        defs["Address"]["properties"]["city"]["description"] = "Town."

    assert {
        ("ENUM_VALUE_ADDED", "update_shipping.address.country"),
        ("PARAM_DESCRIPTION_CHANGED", "update_shipping.address.city"),
    } <= rules(diff(old, edited(old, edit)))


def test_prompt_changes_are_not_breaking():
    old = load(HELPDESK)

    def edit(data):
        tool(data, "list_policies")["description"] = "Policies, rewritten."
        search = tool(data, "search_orders")["input_schema"]["properties"]
        search["limit"]["default"] = 5
        search["limit"]["maximum"] = 100
        search["fuzzy"] = {"type": "boolean", "default": False}
        data["tools"].append(
            {"name": "new_tool", "description": "x", "input_schema": None, "shared": True, "offered_on": []}
        )

    changes = diff(old, edited(old, edit))
    assert {
        ("TOOL_DESCRIPTION_CHANGED", "list_policies"),
        ("DEFAULT_CHANGED", "search_orders.limit"),
        ("CONSTRAINT_LOOSENED", "search_orders.limit"),
        ("OPTIONAL_PARAM_ADDED", "search_orders.fuzzy"),
        ("TOOL_ADDED", "new_tool"),
    } == rules(changes)
    assert not any(c.breaking for c in changes)


WIDENED = ": every value valid before still is; the model now reads "


@pytest.mark.parametrize(
    ("before", "after", "rule", "detail"),
    [
        ("integer", "number", "TYPE_WIDENED", "integer → number" + WIDENED + "number"),  # every integer is a number
        ("integer", ["integer", "string"], "TYPE_WIDENED", "integer → integer | string" + WIDENED + "integer | string"),
        ("number", "integer", "TYPE_CHANGED", "number → integer"),  # 2.5 no longer passes
        ("integer", "string", "TYPE_CHANGED", "integer → string"),
    ],
)
def test_a_type_that_admits_every_old_value_is_a_widening(before, after, rule, detail):
    def retype(to):
        return lambda data: tool(data, "search_orders")["input_schema"]["properties"]["limit"].update(type=to)

    old = edited(load(HELPDESK), retype(before))
    (change,) = [c for c in diff(old, edited(old, retype(after))) if c.rule.startswith("TYPE_")]
    assert (change.rule, change.subject, change.detail) == (rule, "search_orders.limit", detail)
    assert change.breaking == (rule == "TYPE_CHANGED")


def test_data_changes():
    old = load(HELPDESK)

    def edit(data):
        data["splits"] = [s for s in data["splits"] if s["name"] != "test"] + [{"name": "dev", "num_tasks": 5}]
        data["tasks"].pop("test")
        next(s for s in data["splits"] if s["name"] == "train")["num_tasks"] = 301
        props = data["task_schema"]["properties"]
        del props["difficulty"]
        props["opened_hours_ago"] = {"type": "string"}
        props["region"] = {"type": "string"}
        tool(data, "escalate")["shared"] = True

    changes = diff(old, edited(old, edit))
    assert {
        ("SPLIT_REMOVED", "test"),
        ("SPLIT_ADDED", "dev"),
        ("TASK_COUNT_CHANGED", "train"),
        ("TASK_FIELD_REMOVED", "task.difficulty"),
        ("TASK_FIELD_RETYPED", "task.opened_hours_ago"),
        ("TASK_FIELD_ADDED", "task.region"),
        ("TASK_TOOLS_CHANGED", "escalate"),
    } == rules(changes)
    assert {c.rule for c in changes if c.breaking} == {"SPLIT_REMOVED", "TASK_FIELD_REMOVED"}


def test_changed_task_values_are_a_data_change():
    """Same splits, same counts, same task schema: only the stored values differ."""
    old = load(HELPDESK)

    def edit(data):
        for index in (3, 7):
            spec = data["tasks"]["train"]["tasks"][index]["spec"]
            spec["message"] += " (edited)"

    changes = diff(old, edited(old, edit))
    count = len(old.tasks["train"].tasks)
    assert [(c.rule, c.subject, c.detail) for c in changes] == [
        ("TASKS_CHANGED", "train", f"2 of {count} stored tasks changed (first: train[3])")
    ]
    assert changes[0].category == "DATA" and not changes[0].breaking


def test_every_rule_has_a_category():
    assert {category for category, _ in RULES.values()} == {"TRUST", "CALL", "PROMPT", "DATA"}


def test_output_formats():
    changes = [Change("TOOL_REMOVED", "echo", "the tool is gone"), Change("TOOL_ADDED", "x", "new tool")]
    text = render(changes, "text").splitlines()
    assert text[0].startswith("TOOL_REMOVED") and "BREAKING" in text[0] and "BREAKING" not in text[1]
    document = json.loads(render(changes, "json"))
    assert document["breaking"] is True and document["changes"][0]["category"] == "CALL"
    github = render(changes, "github").splitlines()
    assert github[0] == "::error title=orlgen TOOL_REMOVED::echo: the tool is gone"
    assert github[1].startswith("::notice ")


@pytest.mark.slow
def test_cli_exit_codes(tmp_path):
    old = load(HELPDESK)
    compatible = tmp_path / "compatible.snapshot.json"
    write_files(edited(old, lambda d: d["tools"][0].update(description="changed")).files(compatible))
    breaking = tmp_path / "breaking.snapshot.json"
    write_files(edited(old, lambda d: d["tools"].pop(0)).files(breaking))
    same = invoke("diff", str(HELPDESK), "--against", str(HELPDESK))
    assert same.exit_code == 0 and same.stdout == ""
    ok = invoke("diff", str(HELPDESK), "--against", str(compatible))
    assert ok.exit_code == 0 and ok.stdout.startswith("TOOL_DESCRIPTION_CHANGED")
    bad = invoke("diff", str(HELPDESK), "--against", str(breaking), "--format", "json")
    assert bad.exit_code == 1 and json.loads(bad.stdout)["breaking"] is True


def test_diff_against_a_live_target(helpdesk_url):
    result = invoke("diff", str(HELPDESK), "--against", helpdesk_url)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # the live env is the env the snapshot was taken from


@pytest.mark.slow
def test_a_parameter_reorder_is_a_prompt_change():
    """The model reads parameters in the declared order: a reorder changes its prompt, no call."""
    old = load(HELPDESK)

    def edit(data):
        order = tool(data, "issue_refund")["property_order"][""]
        order.reverse()

    changes = [c for c in diff(old, edited(old, edit)) if c.rule == "PARAM_ORDER_CHANGED"]
    assert [(c.subject, c.category, c.breaking) for c in changes] == [("issue_refund", "PROMPT", False)]
    assert changes[0].detail == "(order_id, items, reason, note) → (note, reason, items, order_id)"


def test_names_cannot_inject_lines_or_workflow_commands():
    """Subjects are server names: a newline in one must not start a GitHub workflow command or
    forge another report line."""
    change = Change("TOOL_ADDED", "evil\n::error::forged", "new tool")
    assert render([change], "github").count("\n") == 1
    assert "::error::forged" not in render([change], "github").split("::", 2)[2].split("%0A")[0]
    assert render([change], "text").count("\n") == 1
