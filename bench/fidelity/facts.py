"""Schema facts: what a tool's description and input JSON Schema say, one fact each."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bench.fidelity.docstring import parse_docstring
from bench.fidelity.schema_walk import (
    _branches,
    _constraints_of,
    _description_of,
    _enum_values,
    _is_array,
    _nested,
    _types,
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


def tool_facts(set_name: str, group: str, tool: ToolSchema) -> list[Fact]:
    def fact(kind: str, path: str, value: Any, siblings: tuple[str, ...] = ()) -> Fact:
        return Fact(set_name, group, tool.name, kind, path, value, siblings)

    facts = [fact("tool-present", "", tool.name)]
    root = tool.input_schema or {}
    prose, documented, returns = parse_docstring(tool.description.strip(), list(root.get("properties") or {}))
    if prose:
        facts.append(fact("description", "", prose))
    if returns:
        facts.append(fact("returns", "", returns))
    required = set(root.get("required") or [])
    for param, sub in (root.get("properties") or {}).items():
        facts.append(fact("param-name", param, param))
        branches = _branches(sub, root)
        types = _types(sub, root)
        facts += [fact("type", param, t) for t in sorted(types - {"null"})]
        facts += [fact("enum", param, v) for v in _enum_values(branches)]
        for b in branches:
            if not _is_array(b):
                continue
            fixed = (
                b.get("prefixItems")
                if isinstance(b.get("prefixItems"), list)
                else (b["items"] if isinstance(b.get("items"), list) else None)
            )
            if fixed is not None:
                for i, item in enumerate(fixed):
                    facts += [fact("items", f"{param}[{i}]", t) for t in sorted(_types(item, root) - {"null"})]
            elif isinstance(b.get("items"), dict):
                facts += [fact("items", f"{param}[]", t) for t in sorted(_types(b["items"], root) - {"null"})]
                facts += [fact("enum", f"{param}[]", v) for v in _enum_values(_branches(b["items"], root))]
        for b in branches:
            extra = b.get("additionalProperties")
            if b.get("type") == "object" and not b.get("properties") and isinstance(extra, dict) and extra:
                facts += [fact("items", f"{param}{{}}", t) for t in sorted(_types(extra, root) - {"null"})]
        facts.append(fact("required", param, "required" if param in required else "optional"))
        if "null" in types:
            facts.append(fact("nullable", param, True))
        if isinstance(sub, dict) and "default" in sub:
            facts.append(fact("default", param, sub["default"]))
        constraints = _constraints_of(branches)
        facts += [fact("constraint", param, {key: value}) for (key, _), value in constraints.items()]
        for path, info in _nested(sub, root, param, 0, frozenset()).items():
            facts.append(fact("nested", path, " | ".join(sorted(info.types)), info.siblings))
            if info.description:
                facts.append(fact("nested-description", path, info.description, info.siblings))
            facts += [
                fact("nested-constraint", path, {key: value}, info.siblings)
                for (key, _), value in info.constraints.items()
            ]
            facts += [fact("nested-default", path, value, info.siblings) for value in info.default]
        description = _description_of(sub, root) or documented.get(param, "").strip()
        if description:  # else the author may have documented it in the docstring instead
            facts.append(fact("description", param, description))
    return facts
