"""The schema model: a parsed, sanitised schema (`Schema`) and its subschemas (`Node`s).

Everything downstream (type hints, prose, dataset columns, the models for
datamodel-code-generator, `orlgen diff`) reads these, never raw dicts; `orlgen.schema.parser`
makes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from orlgen import lookalike
from orlgen.errors import OrlgenError
from orlgen.schema.raw import json_type

COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
# Constraint keywords in the order prose and the model generator list them.
CONSTRAINTS = BOUNDS + COUNTS + ("pattern", "uniqueItems")


class SchemaError(OrlgenError):
    """A schema orlgen refuses to generate code from; the message names where and why."""


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Dropped:
    """A keyword the sanitiser removed: where (`tool 'x'`), the JSON pointer, and why."""

    where: str
    path: str
    keyword: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: dropped {self.keyword!r} at {printable(self.path or '/')}: {self.why}"


@dataclass(frozen=True, eq=True)
class Node:
    """One subschema, with only what orlgen understands. `Node()` admits anything.

    `ref` names a definition of the enclosing `Schema` ("" is the root itself); other fields
    are the keywords of the same name, typed: `types` in declared order, `properties` in the
    server's declared order, `constraints` as (keyword, value) pairs in `CONSTRAINTS` order.
    """

    types: tuple[str, ...] = ()
    properties: tuple[tuple[str, Node], ...] = ()
    required: tuple[str, ...] = ()
    additional: Node | bool | None = None
    items: Node | None = None
    prefix_items: tuple[Node, ...] = ()
    items_closed: bool = False
    any_of: tuple[Node, ...] = ()
    all_of: tuple[Node, ...] = ()
    enum: tuple[Any, ...] | None = None
    ref: str | None = None
    description: str | None = None
    default: Any = field(default=NO_DEFAULT, compare=False)
    default_json: str | None = None  # canonical JSON of `default`, so nodes compare by value
    format: str | None = None
    examples: tuple[Any, ...] = ()
    constraints: tuple[tuple[str, Any], ...] = ()

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def constraint(self, key: str) -> Any:
        return dict(self.constraints).get(key)


ANY = Node()


@dataclass(frozen=True)
class Schema:
    """A parsed, sanitised schema: its root, its definitions by name, and what was dropped."""

    root: Node
    defs: Mapping[str, Node]
    dropped: tuple[Dropped, ...] = ()

    def resolve(self, node: Node) -> Node:
        """`node` with its reference chain followed; a chain that loops admits anything."""
        seen: set[str] = set()
        while node.ref is not None:
            if node.ref in seen:
                return ANY
            seen.add(node.ref)
            target = self.root if node.ref == "" else self.defs[node.ref]
            node = _overlay(target, node)
        return node

    def branches(self, node: Node) -> tuple[Node, ...]:
        """The alternatives of a union, flattened and resolved; a non-union is its own one."""
        node = self.resolve(node)
        if node.any_of:
            return tuple(b for branch in node.any_of for b in self.branches(branch))
        if len(node.all_of) == 1:
            return self.branches(_overlay(node.all_of[0], replace(node, all_of=())))
        return (node,)

    def json_types(self, node: Node) -> frozenset[str]:
        """The JSON types `node` admits; empty means anything."""
        found: set[str] = set()
        for branch in self.branches(node):
            types = _own_types(branch)
            if not types:
                return frozenset()
            found |= types
        return frozenset(found)

    def admits_null(self, node: Node) -> bool:
        types = self.json_types(node)
        return not types or "null" in types


def _own_types(node: Node) -> frozenset[str]:
    if node.enum is not None:
        return frozenset(json_type(value) for value in node.enum)
    if node.types:
        return frozenset(node.types)
    if node.properties or node.additional is not None:
        return frozenset({"object"})
    if node.items is not None or node.prefix_items:
        return frozenset({"array"})
    return frozenset()


def _overlay(target: Node, referrer: Node) -> Node:
    """A referenced schema seen through its referrer: the referrer's own description and
    default describe this use of it (pydantic puts them beside `$ref`)."""
    updates: dict[str, Any] = {}
    if referrer.description is not None:
        updates["description"] = referrer.description
    if referrer.has_default:
        updates["default"], updates["default_json"] = referrer.default, referrer.default_json
    return replace(target, **updates) if updates else target


def printable(text: str, limit: int = 200) -> str:
    """Server text fit for a one-line message: control characters escaped, length bounded."""
    shown = lookalike.escaped(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
