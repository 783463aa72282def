"""`Node` → plain JSON Schema for datamodel-code-generator: only understood keywords."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import lru_cache
from typing import Annotated

from orlgen.schema.model import ANY, Node, Schema
from orlgen.schema.raw import JSON, unique


def emit_json(schema: Schema, node: Node, ref: Callable[[str], str]) -> JSON:
    """`node` as plain JSON Schema for datamodel-code-generator: only understood keywords,
    `$ref`s rewritten by `ref(name)`, `format` left out (each becomes a plain type, so no
    generated model masks a password, imports an e-mail validator or parses a decimal), and
    patterns pydantic cannot compile left out (the server still enforces them)."""
    return _emit(node, ref, schema)


def _emit(node: Node, ref: Callable[[str], str], schema: Schema, field: bool = False) -> JSON:
    """`node` as JSON Schema; `field` when it is a property's schema, the one place a default means
    something to a model (on a branch, an item or a definition datamodel-code-generator would
    give it to a root model instead)."""
    node = _fold_null(_merge_literals(node))
    out: JSON = {}
    if node.ref is not None:
        out["$ref"] = ref(node.ref)
    if node.types:
        out["type"] = node.types[0] if len(node.types) == 1 else list(node.types)
    out.update(_object_keywords(node, ref, schema))
    out.update(_array_keywords(node, ref, schema))
    out.update(_choice_keywords(node, ref, schema))
    if node.description is not None:
        out["description"] = node.description
    out.update((key, value) for key, value in node.constraints if key != "pattern" or pattern_compiles(value))
    if field and _keeps_default(node):
        out["default"] = node.default
        if node.default is None and not schema.admits_null(node):
            out = _nullable(out)  # pydantic's `x: T = None`: the model must accept the None it defaults to
    return out


def _object_keywords(node: Node, ref: Callable[[str], str], schema: Schema) -> JSON:
    out: JSON = {}
    if node.properties:
        out["properties"] = {name: _emit(sub, ref, schema, field=True) for name, sub in node.properties}
    if node.required:
        out["required"] = list(node.required)
    if isinstance(node.additional, bool):
        out["additionalProperties"] = node.additional
    elif node.additional is not None:
        out["additionalProperties"] = _emit(node.additional, ref, schema)
    return out


def _array_keywords(node: Node, ref: Callable[[str], str], schema: Schema) -> JSON:
    out: JSON = {}
    if node.prefix_items:
        out["prefixItems"] = [_emit(item, ref, schema) for item in node.prefix_items]
    if node.items is not None:
        out["items"] = _emit(node.items, ref, schema)
    elif node.items_closed and node.prefix_items:
        out["items"] = False
    return out


def _choice_keywords(node: Node, ref: Callable[[str], str], schema: Schema) -> JSON:
    out: JSON = {}
    if node.enum is not None:
        out["enum"] = list(node.enum)
    if node.any_of:
        out["anyOf"] = [_emit(branch, ref, schema) for branch in node.any_of]
    if node.all_of:
        out["allOf"] = [_emit(part, ref, schema) for part in node.all_of]
    return out


def _keeps_default(node: Node) -> bool:
    """A model's default stays with the server: datamodel-code-generator would write the dict
    itself as the default of a model-typed field (a type error); unset, nothing is sent."""
    return node.has_default and not (isinstance(node.default, dict) and (node.ref is not None or node.properties))


def _nullable(out: JSON) -> JSON:
    """An emitted property schema that also admits null: `null` added to a plain type list (a
    union of branches would become a root model holding the field's default), else a branch."""
    plain = isinstance(out.get("type"), str) and out["type"] != "object"
    if plain and not any(key in out for key in ("$ref", "anyOf", "allOf", "enum")):
        return {**out, "type": [out["type"], "null"]}
    inner = {key: value for key, value in out.items() if key not in ("default", "description")}
    usage: JSON = {key: out[key] for key in ("default", "description") if key in out}
    return {"anyOf": [inner, {"type": "null"}], **usage}


def _merge_literals(node: Node) -> Node:
    """`anyOf` branches that are bare enums/consts → one enum branch, where the first stood, once
    bare nested `anyOf`s are spliced in. Same meaning, and one `Literal[...]` in the model."""
    if not node.any_of:
        return node
    node = replace(node, any_of=tuple(_flat(node.any_of)))
    bare = [b for b in node.any_of if b.enum is not None and replace(b, enum=None, description=None) == ANY]
    if len(bare) < 2:
        return node
    merged = Node(enum=tuple(unique(value for branch in bare for value in branch.enum or ())))
    branches = [merged if b is bare[0] else b for b in node.any_of if b is bare[0] or b not in bare]
    if len(branches) == 1:
        return replace(node, any_of=(), enum=merged.enum)
    return replace(node, any_of=tuple(branches))


def _flat(branches: tuple[Node, ...]) -> Iterator[Node]:
    for branch in branches:
        if branch.any_of and replace(branch, any_of=(), description=None) == ANY:
            yield from _flat(branch.any_of)
        else:
            yield branch


def _fold_null(node: Node) -> Node:
    """`anyOf: [S, {type: null}]` with an inline, typed S → S admitting null too. Same meaning,
    and datamodel-code-generator renders it as `T | None` instead of a separate root model
    (which it gives the field's default, breaking the model's typing)."""
    other = _beside_null(node)
    if other is None or not _inline_typed(other):
        return node
    return replace(
        other,
        types=(*other.types, "null"),
        description=node.description if node.description is not None else other.description,
        default=node.default if node.has_default else other.default,
        default_json=node.default_json if node.has_default else other.default_json,
    )


_NULL = Node(types=("null",))


def _beside_null(node: Node) -> Node | None:
    """S, when `node` is exactly `anyOf: [S, {type: null}]` (either order), else None."""
    if len(node.any_of) != 2 or node.types or node.enum is not None:
        return None
    nulls = [b for b in node.any_of if b == _NULL]
    others = [b for b in node.any_of if b != _NULL]
    return others[0] if len(nulls) == 1 and len(others) == 1 else None


def _inline_typed(node: Node) -> bool:
    """Typed, no reference or union, and not an object: an object stays a model of its own,
    shareable with its twins."""
    return not (
        node.ref is not None
        or node.any_of
        or node.all_of
        or node.enum is not None
        or not node.types
        or "object" in node.types
    )


@lru_cache(maxsize=1024)
def pattern_compiles(pattern: str) -> bool:
    """Whether pydantic's regex engine accepts `pattern` (a model using it must import)."""
    from pydantic import StringConstraints, TypeAdapter

    try:
        TypeAdapter(Annotated[str, StringConstraints(pattern=pattern)])
    except Exception:  # pydantic reports bad patterns with several error types
        return False
    return True
