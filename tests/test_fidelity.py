"""Schema fidelity (bench/fidelity.py): the facts of each tool's JSON Schema that reach the model
through `transformers.utils.get_json_schema`, for orlgen's generated methods and for TRL's
`OpenRewardSpec` binder, on the example envs, the openreward SDK toolsets and hostile schemas."""

from __future__ import annotations

import json

import pytest

from bench import fidelity

@pytest.fixture(scope="module")
def result() -> fidelity.Result:
    return fidelity.measure()


def _lost(result: fidelity.Result, binder: str, set_name: str) -> set[tuple[str, str, str, str]]:
    return {(o.fact.group, o.fact.tool, o.fact.kind, o.fact.path) for o in result.lost(binder, set_name)}


def test_every_set_is_measured(result):
    assert result.tools["examples"] == 11  # echo: 2, helpdesk: 9 (task-only tools included)
    assert result.tools["sdk-toolsets"] >= 80  # every tool of every toolset in openreward.toolsets
    assert result.tools["hostile"] == 8
    for kind in fidelity.KINDS:
        assert result.facts(kind=kind) > 0, kind


def test_orlgen_loses_nothing_on_sdk_toolsets(result):
    assert _lost(result, "orlgen", "sdk-toolsets") == set()


def test_orlgen_loses_nothing_on_hostile_schemas(result):
    assert _lost(result, "orlgen", "hostile") == set()


def test_orlgen_loses_nothing_on_example_envs(result):
    assert _lost(result, "orlgen", "examples") == set()


def test_orlgen_loses_strictly_fewer_facts_than_trl(result):
    orlgen, trl = result.counts("orlgen"), result.counts("trl")
    assert orlgen["lost"] < trl["lost"]
    assert orlgen["structural"] > trl["structural"]
    for set_name in fidelity.SETS:
        assert result.counts("orlgen", set_name)["lost"] < result.counts("trl", set_name)["lost"], set_name


def test_orlgen_shows_every_tool_and_nothing_else(result):
    assert result.counts("orlgen", kind="tool-present")["lost"] == 0
    assert result.extra["orlgen"] == []  # no adapter helper leaks into the model's tool list


def test_trl_failures_are_counted_not_raised(result):
    # TRL's binder crashes on `from`/`class`, skips `file-path`/`submit-solution`, and
    # get_json_schema crashes on its docstrings for `search` and `lookup`: all six are lost.
    lost = {o.fact.tool for o in result.lost("trl", "hostile") if o.fact.kind == "tool-present"}
    assert lost == {"transfer", "save_receipt", "class", "submit-solution", "search", "lookup"}


def test_numbers_serialise(result):
    data = json.loads(json.dumps(result.to_json()))
    total = data["total"]
    assert total["facts"] == sum(total["orlgen"].values()) == sum(total["trl"].values())
    assert sum(data["by_kind"][k]["facts"] for k in fidelity.KINDS) == total["facts"]
    assert len(data["lost"]["orlgen"]) == total["orlgen"]["lost"]


def test_facts_of_an_optional_pair():
    # pydantic's `tuple[int, int] | None = None`: one fact per position, nullable, default, lengths.
    schema = fidelity._Shapes.model_json_schema()
    facts = {(f.kind, f.path, json.dumps(f.value)) for f in fidelity.tool_facts("s", "g", fidelity.ToolSchema(
        "draw", "", schema)) if f.path == "point" or f.path.startswith("point[")}
    assert facts == {
        ("type", "point", '"array"'), ("items", "point[0]", '"integer"'), ("items", "point[1]", '"integer"'),
        ("required", "point", '"optional"'), ("nullable", "point", "true"), ("default", "point", "null"),
        ("constraint", "point", '{"minItems": 2}'), ("constraint", "point", '{"maxItems": 2}'),
        ("description", "point", '"An optional pair."'),
    }
