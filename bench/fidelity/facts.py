"""Schema facts: what a tool's description and input JSON Schema say, one fact each."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.fidelity.docstring import parse_docstring
from bench.fidelity.schema_walk import (
    JSON,
    NestedField,
    concrete_branches,
    constraints_of,
    description_of,
    enum_values,
    is_array,
    nested_fields,
    schema_types,
)
from bench.fidelity.sets import ToolSchema

KINDS = (
    "type",
    "enum",
    "items",
    "required",
    "nullable",
    "default",
    "constraint",
    "nested",
    "nested-description",
    "nested-constraint",
    "nested-default",
    "description",
    "returns",
    "param-name",
    "tool-present",
)


@dataclass(frozen=True)
class Fact:
    set_name: str
    group: str
    tool: str
    kind: str
    path: str  # `param`, `param.nested[].leaf`, or `` for tool-level facts
    value: Any  # JSON-able
    siblings: tuple[str, ...] = field(default=(), compare=False)  # of a nested leaf: the other fields beside it

    def label(self) -> str:
        where = f"{self.tool}.{self.path}" if self.path else self.tool
        words = self.kind.endswith("description")
        value = self.value if isinstance(self.value, str) and not words else json.dumps(self.value)
        if words and len(value) > 60:
            value = value[:57] + '..."'
        return f"{self.kind:<12} {where}: {value}"


_Maker = Callable[..., Fact]  # a `Fact` with set, group and tool filled in: (kind, path, value, siblings=())


def tool_facts(set_name: str, group: str, tool: ToolSchema) -> list[Fact]:
    """Every fact of one tool, in a fixed order (the tool's, then each parameter's)."""
    fact = functools.partial(Fact, set_name, group, tool.name)
    root = tool.input_schema or {}
    properties = root.get("properties") or {}
    prose, documented, returns = parse_docstring(tool.description.strip(), list(properties))
    facts = [fact("tool-present", "", tool.name)]
    facts += [fact(kind, "", text) for kind, text in (("description", prose), ("returns", returns)) if text]
    required = set(root.get("required") or [])
    for param, sub in properties.items():
        facts += _param_facts(fact, root, param, sub, param in required)
        description = description_of(sub, root) or documented.get(param, "").strip()
        if description:  # else the author may have documented it in the docstring instead
            facts.append(fact("description", param, description))
    return facts


def _param_facts(fact: _Maker, root: JSON, param: str, sub: Any, required: bool) -> list[Fact]:
    branches = concrete_branches(sub, root)
    types = schema_types(sub, root)
    facts = [fact("param-name", param, param)]
    facts += [fact("type", param, t) for t in sorted(types - {"null"})]
    facts += [fact("enum", param, v) for v in enum_values(branches)]
    for b in branches:
        facts += _array_facts(fact, root, param, b)
    for b in branches:
        facts += _map_facts(fact, root, param, b)
    facts.append(fact("required", param, "required" if required else "optional"))
    if "null" in types:
        facts.append(fact("nullable", param, True))
    if isinstance(sub, dict) and "default" in sub:
        facts.append(fact("default", param, sub["default"]))
    facts += [fact("constraint", param, {key: value}) for (key, _), value in constraints_of(branches).items()]
    for path, info in nested_fields(sub, root, param, 0, frozenset()).items():
        facts += _nested_facts(fact, path, info)
    return facts


def _array_facts(fact: _Maker, root: JSON, param: str, b: JSON) -> list[Fact]:
    """Item types of an array branch: per position of a tuple, else of every item (and its enum)."""
    if not is_array(b):
        return []
    fixed = (
        b.get("prefixItems")
        if isinstance(b.get("prefixItems"), list)
        else (b["items"] if isinstance(b.get("items"), list) else None)
    )
    if fixed is not None:
        return [fact("items", f"{param}[{i}]", t) for i, item in enumerate(fixed) for t in fact_types(item, root)]
    items = b.get("items")
    if not isinstance(items, dict):
        return []
    return [fact("items", f"{param}[]", t) for t in fact_types(items, root)] + [
        fact("enum", f"{param}[]", v) for v in enum_values(concrete_branches(items, root))
    ]


def _map_facts(fact: _Maker, root: JSON, param: str, b: JSON) -> list[Fact]:
    """The value types of a map (an object branch with `additionalProperties` and no properties)."""
    extra = b.get("additionalProperties")
    if b.get("type") == "object" and not b.get("properties") and isinstance(extra, dict) and extra:
        return [fact("items", f"{param}{{}}", t) for t in fact_types(extra, root)]
    return []


def _nested_facts(fact: _Maker, path: str, info: NestedField) -> list[Fact]:
    facts = [fact("nested", path, " | ".join(sorted(info.types)), info.siblings)]
    if info.description:
        facts.append(fact("nested-description", path, info.description, info.siblings))
    facts += [
        fact("nested-constraint", path, {key: value}, info.siblings) for (key, _), value in info.constraints.items()
    ]
    facts += [fact("nested-default", path, value, info.siblings) for value in info.default]
    return facts


def fact_types(schema: Any, root: JSON) -> list[str]:
    """The non-null types a schema admits, sorted: one fact each."""
    return sorted(schema_types(schema, root) - {"null"})
