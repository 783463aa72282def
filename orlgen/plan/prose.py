"""What the model reads about a parameter beyond its type hint: structure, constraints, defaults.

`get_json_schema` can show neither nested object fields nor constraints nor defaults, so the
plan writes them into the parameter's description, in short English the model can use:
`{street: string, lines?: [string] = []}`, `at least 1 character`, `Default: 10.`
"""

from __future__ import annotations

import json
from typing import Any

from orlgen.schema import Node, Schema

_MAX_DEPTH = 4  # nested objects shown in a structure text before `{...}`
_COUNTED = {"Length": ("character", "characters"), "Items": ("item", "items"), "Properties": ("entry", "entries")}


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def structure(node: Node, schema: Schema) -> str | None:
    """A one-line structure text for a value a hint cannot describe (objects with named
    fields, arrays of them), or None when the hint says it all. Each field carries its own
    words after its type, `(description; constraints)`, written once per definition: a shape
    met again (another field of the same model) shows its fields' names and types only."""
    text = _shape(node, schema, 0, frozenset(), set())
    return text if "{" in text else None


def _shape(node: Node, schema: Schema, depth: int, seen: frozenset[str], described: set[str]) -> str:
    if node.ref is not None:
        if node.ref in seen:
            return f"<{node.ref or 'itself'}>"
        seen = seen | {node.ref}
    if depth > _MAX_DEPTH:  # also ends a cycle that runs through union branches or items
        return "..."
    branches = schema.branches(node)
    if len(branches) > 1:
        return " | ".join(dict.fromkeys(_shape(branch, schema, depth + 1, seen, described) for branch in branches))
    resolved = branches[0]
    if resolved.enum is not None:
        return " | ".join(json_text(value) for value in resolved.enum)
    if resolved.properties:
        if depth >= _MAX_DEPTH:
            return "{...}"
        # The definition's fields are described the first time it is shown; `seen` holds it now.
        notes = node.ref is None or node.ref not in described
        if node.ref is not None:
            described.add(node.ref)
        fields = (
            _field(name, sub, resolved, schema, depth, seen, described, notes) for name, sub in resolved.properties
        )
        return "{" + ", ".join(fields) + "}"
    if isinstance(resolved.additional, Node) and resolved.additional != Node():
        return "{string: " + _shape(resolved.additional, schema, depth + 1, seen, described) + "}"
    if resolved.prefix_items:
        return "[" + ", ".join(_shape(item, schema, depth + 1, seen, described) for item in resolved.prefix_items) + "]"
    if resolved.items is not None:
        return f"[{_shape(resolved.items, schema, depth + 1, seen, described)}]"
    return " | ".join(resolved.types) if resolved.types else "any"


def _field(
    name: str,
    sub: Node,
    parent: Node,
    schema: Schema,
    depth: int,
    seen: frozenset[str],
    described: set[str],
    notes: bool,
) -> str:
    optional = "" if name in parent.required else "?"
    resolved = schema.resolve(sub)
    default = f" = {json_text(resolved.default)}" if resolved.has_default else ""
    first = sub.ref is None or sub.ref not in described  # a definition's own words, the first time only
    text = f"{name}{optional}: {_shape(sub, schema, depth + 1, seen, described)}{default}"
    if not notes:
        return text
    words = " ".join(((resolved if first else sub).description or "").split())
    limits = ", ".join(constraints(sub, schema)) if first else ""
    if words and limits:  # `(City or town. At least 1 character)`, `(Street name; at least 1 character)`
        words += f" {limits[:1].upper()}{limits[1:]}" if words.endswith((".", "!", "?")) else f"; {limits}"
    return f"{text} ({words or limits})" if words or limits else text


def constraints(node: Node, schema: Schema) -> list[str]:
    """Human-readable constraints of a value, its union branches' included."""
    found: list[str] = []
    for branch in schema.branches(node):
        for phrase in _constraints(branch):
            if phrase not in found:
                found.append(phrase)
    return found


def _constraints(node: Node) -> list[str]:
    values = dict(node.constraints)
    phrases = []
    for key, template in (
        ("minimum", ">= {}"),
        ("maximum", "<= {}"),
        ("exclusiveMinimum", "> {}"),
        ("exclusiveMaximum", "< {}"),
        ("multipleOf", "a multiple of {}"),
    ):
        if key in values:
            phrases.append(template.format(values[key]))
    for suffix, (one, many) in _COUNTED.items():
        low, high = values.get(f"min{suffix}"), values.get(f"max{suffix}")
        if low is not None and low == high:
            phrases.append(f"exactly {low} {one if low == 1 else many}")
            continue
        if low is not None and low > 0:
            phrases.append(f"at least {low} {one if low == 1 else many}")
        if high is not None:
            phrases.append(f"at most {high} {one if high == 1 else many}")
    if "pattern" in values:
        phrases.append(f"matching `{values['pattern']}`")
    if node.format:
        phrases.append(f"format {node.format}")
    if values.get("uniqueItems"):
        phrases.append("unique items")
    return phrases


def default(node: Node, schema: Schema) -> str | None:
    """`Default: 10.`: `get_json_schema` has no place for a default."""
    node = schema.resolve(node)
    if not node.has_default:
        return None
    return f"Default: {json_text(node.default)}."


def examples(node: Node, schema: Schema) -> str | None:
    node = schema.resolve(node)
    if not node.examples:
        return None
    label = "Example" if len(node.examples) == 1 else "Examples"
    return f"{label}: {', '.join(json_text(value) for value in node.examples)}."
