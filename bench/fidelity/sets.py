"""The schema sets measured: the example envs, the openreward SDK's toolsets (the hostile set is in
`bench.fidelity.hostile`)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
from dataclasses import dataclass
from typing import Any

from bench.common import REPO
from bench.fidelity.schema_walk import JSON

SETS = ("examples", "sdk-toolsets", "hostile")


# ── inputs ───────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ToolSchema:
    name: str
    description: str
    input_schema: JSON | None
    shared: bool = True


@dataclass
class Group:
    """Tools that go into one generated module / one TRL class (tool names unique)."""

    set_name: str
    name: str  # an identifier-ish slug
    tools: list[ToolSchema]
    snapshot: Any = None  # an orlgen Snapshot to render as is (the example envs); else one is built


def example_groups() -> list[Group]:
    from orlgen.snapshot.model import load

    groups = []
    for name in ("echo", "helpdesk"):
        snapshot = load(REPO / "generated" / f"{name}.snapshot.json")
        tools = [ToolSchema(t.name, t.description, t.input_schema, t.shared) for t in snapshot.tools]
        groups.append(Group("examples", name, tools, snapshot))
    return groups


#: Example envs written the way published ORS envs are (Google docstrings, no Field descriptions).
PUBLISHED = (
    ("wordgrid", "examples.wordgrid", "WordGrid"),
    ("icu_sepsis", "examples.icu_sepsis", "IcuSepsisEnvironment"),
)


def _class_tools(cls: type) -> list[ToolSchema]:
    """The shared tools of an `Environment` class, as `Environment.list_tools` lists them: name =
    attribute name, description = stripped docstring, schema = the params model's JSON Schema."""
    from openreward.environments.environment import Environment, _introspect_tool

    tools = []
    for name in dir(cls):
        fn = getattr(cls, name)
        if not Environment._is_tool(fn) or not getattr(fn, "_env_tool_shared", True):
            continue
        _, hints, params = _introspect_tool(fn)
        schema = hints[params[0].name].model_json_schema() if params else None
        tools.append(ToolSchema(name, (fn.__doc__ or "").strip(), schema))
    return tools


def published_groups() -> list[Group]:
    groups = []
    for name, module, cls_name in PUBLISHED:
        cls = getattr(importlib.import_module(module), cls_name)
        groups.append(Group("examples", name, _class_tools(cls)))
    return groups


def sdk_groups() -> list[Group]:
    """One group per toolset exported by `openreward.toolsets`, its tools listed exactly as
    `Environment.list_tools` lists a declared toolset's tools (name = attribute name,
    description = stripped docstring, schema = the param model's `model_json_schema()`).
    A tool identical (name, description, schema) to one of an earlier toolset is counted once."""
    import openreward.toolsets as toolsets

    seen: set[str] = set()
    groups = []
    for cls_name in sorted(n for n in toolsets.__all__ if n != "BUILTIN_TOOLSETS"):
        tools = []
        for tool in _class_tools(getattr(toolsets, cls_name)):
            key = json.dumps([tool.name, tool.description, tool.input_schema], sort_keys=True)
            if key not in seen:
                seen.add(key)
                tools.append(tool)
        if tools:
            groups.append(Group("sdk-toolsets", _slug(cls_name), tools))
    return groups


def _slug(text: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()
