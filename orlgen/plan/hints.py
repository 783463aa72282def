"""Python type hints for schema nodes, in the subset `transformers.utils.get_json_schema` reads.

TRL shows the model the JSON schema that `get_json_schema` derives from each method's hints, and
(trl 1.16 with transformers >= 5.15) uses it to type the model's arguments, so a hint must be
both accurate and readable by that function: builtins, `Literal`, `Any`, `list[T]`,
`tuple[A, B]`, `dict[str, V]` and unions of them. Objects with named properties become
`JSONObject` (`dict` to that function, `dict[str, Any]` to a type checker: see
`orlgen.runtime.types`): no hint it accepts can say more; their structure goes into the
parameter's prose instead. An array with open items is `JSONArray` (`list`) likewise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from orlgen.schema import Node, Schema

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
OBJECT = "JSONObject"  # names from orlgen.runtime.types, imported by the module that uses them
ARRAY = "JSONArray"


def python_hint(node: Node, schema: Schema) -> str:
    return _join(_members(node, schema, frozenset()))


class _Literal(tuple):  # type: ignore[type-arg]
    """The values of one `Literal[...]` union member; `_join` merges all of a union's into one."""


def _join(members: list[str | _Literal]) -> str:
    """Union members → hint text: `Any` absorbs everything, one `Literal[...]` for all literal
    values, `None` goes last, no repeats."""
    values = [value for member in members if isinstance(member, _Literal) for value in member]
    unique = list(dict.fromkeys(member for member in members if not isinstance(member, _Literal)))
    if values:
        literal = f"Literal[{', '.join(repr(v) for v in _distinct(values))}]"
        first = next(i for i, member in enumerate(members) if isinstance(member, _Literal))
        unique.insert(len([m for m in dict.fromkeys(members[:first]) if not isinstance(m, _Literal)]), literal)
    if not unique or "Any" in unique or unique == ["None"]:  # `list[None]` is no hint get_json_schema reads
        return "Any"
    return " | ".join([m for m in unique if m != "None"] + (["None"] if "None" in unique else []))


def _distinct(values: list[Any]) -> list[Any]:
    """Values without repeats, `1` and `True` kept apart (equal in Python, not in JSON)."""
    seen: set[tuple[str, Any]] = set()
    out = []
    for value in values:
        key = (type(value).__name__, value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _members(node: Node, schema: Schema, seen: frozenset[str]) -> list[str | _Literal]:
    """The union members of the hint for `node` (one member for a non-union)."""
    if node.ref is not None:
        if node.ref in seen:  # a recursive model: the cycle ends in a plain container
            return [OBJECT] if schema.json_types(node) == {"object"} else ["Any"]
        seen = seen | {node.ref}
        node = schema.resolve(node)
        if node.ref is not None:
            return ["Any"]
    if node.enum is not None:
        return _literal(node.enum)
    if node.any_of:
        return [m for branch in node.any_of for m in _members(branch, schema, seen)]
    if len(node.all_of) == 1:
        return _members(node.all_of[0], schema, seen)
    if len(node.types) > 1:
        return [m for t in node.types for m in _members(_only(node, t), schema, seen)]
    kind = node.types[0] if node.types else None
    if kind in _SCALARS:
        return [_SCALARS[kind]]
    if kind == "array" or (kind is None and (node.items is not None or node.prefix_items)):
        return [_array(node, schema, seen)]
    if kind == "object" or (kind is None and (node.properties or node.additional is not None or node.all_of)):
        return [_object(node, schema, seen)]
    return ["Any"]


def _only(node: Node, kind: str) -> Node:
    return replace(node, types=(kind,))


def _literal(values: tuple[Any, ...]) -> list[str | _Literal]:
    if not all(isinstance(v, (str, int, float, bool)) or v is None for v in values):
        return ["Any"]
    members = [v for v in values if v is not None]
    literal: list[str | _Literal] = [_Literal(members)] if members else []
    return literal + (["None"] if None in values else [])


def _array(node: Node, schema: Schema, seen: frozenset[str]) -> str:
    fixed = node.prefix_items
    closed = node.items_closed or node.constraint("maxItems") == len(fixed)
    if len(fixed) >= 2 and closed and node.items is None:
        return f"tuple[{', '.join(_join(_members(item, schema, seen)) for item in fixed)}]"
    if node.items is not None:
        return f"list[{_join(_members(node.items, schema, seen))}]"
    return ARRAY


def _object(node: Node, schema: Schema, seen: frozenset[str]) -> str:
    if not node.properties and isinstance(node.additional, Node) and node.additional != Node():
        return f"dict[str, {_join(_members(node.additional, schema, seen))}]"
    return OBJECT
