"""The verl 0.9 trainer: `<name>_verl.py` (a `BaseTool` for the env's tools, a registered
`ToolAgentLoop` subclass owning one ORS session per trajectory, `build_dataset` in verl's parquet
shape; `orlgen.runtime.verl`) and `<name>_verl_tools.yaml`, the tool config verl loads
(`actor_rollout_ref.rollout.multi_turn.tool_config_path`) and its users review.

verl's schema model keeps of each property only `type`, `description` and `enum`
(`verl.tools.schemas.OpenAIFunctionPropertySchema`, TRAINERS-NEXT.md section 1.4), and rejects a
property written with `anyOf`. So the YAML writes an optional parameter as `type: [T, "null"]`,
keeps enums, and says what verl would drop (structure, bounds, defaults, examples) in the
description, in the words the TRL module's docstrings use (`Param.doc`); the module validates
every call with the env's full params models before any request. No mixture: verl mixes
datasets by their rows' `agent_name`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from orlgen.plan.planner import ModulePlan, ToolPlan
from orlgen.plan.reserved import VERL_IMPORTS
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import docstring_literal, literal
from orlgen.schema import JSON
from orlgen.trainers import ExtraFile, Trainer, module_suffix

_EXPORTS = ("AGENT_NAME", "CALLS", "SNAPSHOT_SHA256", "SPEC", "SPLITS", "TARGET", "build_dataset")
_ALL_TYPES = ["string", "number", "integer", "boolean", "object", "array", "null"]


def context(plan: ModulePlan) -> dict[str, object]:
    stem = plan.env_class.removesuffix("Env")
    classes = {"tool_class": f"{stem}VerlTool", "loop_class": f"{stem}AgentLoop"}
    tools = sorted(plan.tools, key=lambda tool: tool.shown_name)
    exported = [*_EXPORTS, *classes.values(), *(tool.params_class for tool in plan.tools if tool.params_class)]
    return {
        "plan": plan,
        **classes,
        "description": docstring_literal(_summary(plan), indent=""),
        "exports": literal(dunder_all_order(exported)),
        "agent_name": literal(f"{plan.name}_ors"),
        "name_literal": literal(plan.env_class),
        "tools": tools,
    }


def tool_config(plan: ModulePlan, module: str) -> str:
    """The tool YAML's body: one entry per tool, each the module's tool class with the schema
    verl shows the model."""
    import yaml  # type: ignore[import-untyped]

    stem = plan.env_class.removesuffix("Env")
    entries = [
        {
            "class_name": f"{module}.{stem}VerlTool",
            "config": {"type": "native"},
            "tool_schema": {"type": "function", "function": verl_function(tool)},
        }
        for tool in sorted(plan.tools, key=lambda tool: tool.shown_name)
    ]
    intro = (
        f"# verl's tool config for {module}.py: actor_rollout_ref.rollout.multi_turn.tool_config_path=<this file>,\n"
        "# with that module importable by verl's workers (docs/trainers-verl.md). verl keeps each property's\n"
        "# type, description and enum: bounds, defaults, structure and examples are in its description,\n"
        "# and the module checks every call against the env's full schema before any request.\n"
    )

    class Dumper(yaml.SafeDumper):  # type: ignore[misc]
        """Text of several lines as a `|` block, as its author wrote it (PyYAML falls back to
        a quoted style where a block cannot hold the text)."""

    def text(dumper: Any, value: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    body = yaml.dump({"tools": entries}, Dumper=Dumper, sort_keys=False, allow_unicode=False, width=100)
    return intro + body


def verl_function(tool: ToolPlan) -> dict[str, Any]:
    """One tool as verl's `OpenAIFunctionSchema` keeps it."""
    properties = tool.parameters.get("properties", {})
    defs = tool.parameters.get("$defs", {})
    shown: dict[str, Any] = {}
    for param in tool.params:
        wire = param.wire_name
        prop = properties.get(wire, {})
        entry: dict[str, Any] = {"type": verl_type(prop, defs), "description": _with_items(param.doc, prop, defs)}
        values = [value for node in _nodes(prop, defs, 0) for value in node.get("enum") or () if value is not None]
        if values:  # an enum behind a `$ref` or an `anyOf` too: verl keeps `enum`, whatever the type
            entry["enum"] = list(dict.fromkeys(values))
        shown[wire] = entry
    parameters: dict[str, Any] = {"type": "object", "properties": shown}
    if tool.parameters.get("required"):
        parameters["required"] = list(tool.parameters["required"])
    return {"name": tool.shown_name, "description": tool.description(), "parameters": parameters}


def verl_type(prop: JSON, defs: JSON) -> str | list[str]:
    """The JSON types `prop` admits, as verl's `type` (one name, or a list: never `anyOf`)."""
    found = list(dict.fromkeys(_types(prop, defs, depth=0)))
    if not found:
        return list(_ALL_TYPES)
    return found[0] if len(found) == 1 else found


def _types(node: Any, defs: JSON, depth: int) -> Iterator[str]:
    for each in _nodes(node, defs, depth):
        declared = each.get("type")
        yield from [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else ()
        if declared is None and isinstance(each.get("enum"), list):
            yield from (_json_type(value) for value in each["enum"])
        if isinstance(each.get("$ref"), str) and _definition(each["$ref"], defs) is None:
            yield "object"


def _nodes(node: Any, defs: JSON, depth: int) -> Iterator[JSON]:
    """`node` and what it stands for: its `$ref`'s definition, its `anyOf`/`allOf` branches."""
    if not isinstance(node, dict) or depth > 8:
        return
    yield node
    if isinstance(node.get("$ref"), str):
        yield from _nodes(_definition(node["$ref"], defs), defs, depth + 1)
    for branch in [*node.get("anyOf", ()), *node.get("allOf", ())]:
        yield from _nodes(branch, defs, depth + 1)


def _definition(reference: str, defs: JSON) -> Any:
    name = reference.removeprefix("#/$defs/").replace("~1", "/").replace("~0", "~")
    return defs.get(name)


def _with_items(doc: str, prop: JSON, defs: JSON) -> str:
    """The parameter's description, and what verl's `type: array` or `type: object` cannot say:
    an array's items, a map's values (an object item's fields are in its `Structure:` already)."""
    values_of = [
        each["additionalProperties"]
        for each in _nodes(prop, defs, 0)
        if isinstance(each.get("additionalProperties"), dict)
    ]
    if values_of:  # a map: what its values are
        kinds = list(dict.fromkeys(kind for value in values_of for kind in _types(value, defs, 0)))
        doc = f"{doc} Its values: {' or '.join(kinds) or 'any value'}."
    items = [each["items"] for each in _nodes(prop, defs, 0) if isinstance(each.get("items"), dict)]
    if not items:
        return doc
    kinds = list(dict.fromkeys(kind for item in items for kind in _types(item, defs, 0)))
    values = [value for item in items for node in _nodes(item, defs, 0) for value in node.get("enum") or ()]
    said = f"An array of {' or '.join(kinds) or 'any value'}"
    if values:
        said += ", one of " + ", ".join(json.dumps(value) for value in dict.fromkeys(values))
    return f"{doc} {said}."


def _json_type(value: Any) -> str:
    kinds = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null", list: "array"}
    return kinds.get(type(value), "object")


def _summary(plan: ModulePlan) -> str:
    return (
        f"verl 0.9 tools and agent loop for the ORS environment {plan.target_value!r}: one session per\n"
        f"trajectory. Tool config: {plan.name}_verl_tools.yaml beside this file; rows from build_dataset()\n"
        "name the loop in agent_name (docs/trainers-verl.md).\n\n"
        f"{plan.facts}"
    )


TRAINER = Trainer(
    name="verl",
    suffix=module_suffix("verl"),
    written_for="verl>=0.9.1,<0.10",
    templates=Path(__file__).resolve().parent / "templates",
    module_template="verl_module.py.jinja",
    mixture_template=None,
    context=context,
    imports=VERL_IMPORTS,
    extra_files=(ExtraFile("_verl_tools.yaml", tool_config),),
)
