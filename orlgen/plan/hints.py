"""Python type hints for schema nodes, in the subset `transformers.utils.get_json_schema` reads.

TRL shows the model the JSON schema that `get_json_schema` derives from each method's hints, and
(trl 1.16 with transformers >= 5.15) uses it to type the model's arguments, so a hint must be
both accurate and readable by that function: builtins, `Literal`, `Any`, `list[T]`,
`tuple[A, B]`, `dict[str, V]` and unions of them. Objects with named properties become
`JSONObject` (`dict` to that function, `dict[str, Any]` to a type checker: see
`orlgen.runtime.types`): no hint it accepts can say more; their structure goes into the
parameter's prose instead. An array with open items is `JSONArray` (`list`) likewise.

A hint is built as data (`Hint`) and written as text from it (`str(hint)`): templates paste the
text, a trainer that needs the type (the skyrl prompt's stand-in method) reads the data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from orlgen.schema import Node, Schema

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
OBJECT = "JSONObject"  # names from orlgen.runtime.types, imported by the module that uses them
ARRAY = "JSONArray"
UNION = "|"
LITERAL = "Literal"
LiteralValue = str | int | float | bool


@dataclass(frozen=True)
class Hint:
    """A type hint as data, beside its text (`str(hint)`), so a trainer reads the type without
    parsing the text back: a name alone (`str`, `Any`, `JSONObject`, `None`), a generic of
    `args` (`list`, `dict`, `tuple`), `Literal` of `values`, or a union (`name` "|") of `args`."""

    name: str
    args: tuple[Hint, ...] = ()
    values: tuple[LiteralValue, ...] = ()

    def __str__(self) -> str:
        if self.name == UNION:
            return " | ".join(str(member) for member in self.args)
        if self.name == LITERAL:
            return f"Literal[{', '.join(repr(value) for value in self.values)}]"
        if self.args:
            return f"{self.name}[{', '.join(str(arg) for arg in self.args)}]"
        return self.name

    @property
    def members(self) -> tuple[Hint, ...]:
        """The union's members; a hint that is no union is its own one member."""
        return self.args if self.name == UNION else (self,)

    def or_none(self) -> Hint:
        """The hint admitting `None` too (pydantic's `x: T = None`), `None` last; `Any` admits it already."""
        if self == ANY or NONE in self.members:
            return self
        return Hint(UNION, (*self.members, NONE))


ANY = Hint("Any")
NONE = Hint("None")


def python_hint(node: Node, schema: Schema) -> str:
    """The hint's text, as a generated module's signature shows it."""
    return str(python_annotation(node, schema))


def python_annotation(node: Node, schema: Schema) -> Hint:
    return _join(_members(node, schema, frozenset()))


class _Literal(tuple):  # type: ignore[type-arg]
    """The values of one `Literal[...]` union member; `_join` merges all of a union's into one."""


def _join(members: list[Hint | _Literal]) -> Hint:
    """Union members → one hint: `Any` absorbs everything, one `Literal[...]` for all literal
    values, `None` goes last, no repeats."""
    values = [value for member in members if isinstance(member, _Literal) for value in member]
    unique = _distinct_hints(members)
    if values:
        literal = Hint(LITERAL, values=tuple(_distinct(values)))
        first = next(i for i, member in enumerate(members) if isinstance(member, _Literal))
        unique.insert(len(_distinct_hints(members[:first])), literal)
    if not unique or ANY in unique or unique == [NONE]:  # `list[None]` is no hint get_json_schema reads
        return ANY
    ordered = [m for m in unique if m != NONE] + ([NONE] if NONE in unique else [])
    return ordered[0] if len(ordered) == 1 else Hint(UNION, tuple(ordered))


def _distinct_hints(members: list[Hint | _Literal]) -> list[Hint]:
    """The hints among `members` without repeats, told apart by their text: `Literal[1]` and
    `Literal[True]` are equal values, but different hints."""
    return list({str(member): member for member in members if not isinstance(member, _Literal)}.values())


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


def _members(node: Node, schema: Schema, seen: frozenset[str]) -> list[Hint | _Literal]:
    """The union members of the hint for `node` (one member for a non-union)."""
    if node.ref is not None:
        if node.ref in seen:  # a recursive model: the cycle ends in a plain container
            return [Hint(OBJECT)] if schema.json_types(node) == {"object"} else [ANY]
        seen = seen | {node.ref}
        node = schema.resolve(node)
        if node.ref is not None:
            return [ANY]
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
        return [Hint(_SCALARS[kind])]
    if kind == "array" or (kind is None and (node.items is not None or node.prefix_items)):
        return [_array(node, schema, seen)]
    if kind == "object" or (kind is None and (node.properties or node.additional is not None or node.all_of)):
        return [_object(node, schema, seen)]
    return [ANY]


def _only(node: Node, kind: str) -> Node:
    return replace(node, types=(kind,))


def _literal(values: tuple[Any, ...]) -> list[Hint | _Literal]:
    if not all(isinstance(v, (str, int, float, bool)) or v is None for v in values):
        return [ANY]
    members = [v for v in values if v is not None]
    literal: list[Hint | _Literal] = [_Literal(members)] if members else []
    return literal + ([NONE] if None in values else [])


def _array(node: Node, schema: Schema, seen: frozenset[str]) -> Hint:
    fixed = node.prefix_items
    closed = node.items_closed or node.constraint("maxItems") == len(fixed)
    if len(fixed) >= 2 and closed and node.items is None:
        return Hint("tuple", tuple(_join(_members(item, schema, seen)) for item in fixed))
    if node.items is not None:
        return Hint("list", (_join(_members(node.items, schema, seen)),))
    return Hint(ARRAY)


def _object(node: Node, schema: Schema, seen: frozenset[str]) -> Hint:
    if not node.properties and isinstance(node.additional, Node) and node.additional != Node():
        return Hint("dict", (Hint("str"), _join(_members(node.additional, schema, seen))))
    return Hint(OBJECT)
