"""Raw JSON, before any parsing: the JSON helpers that read what a snapshot stores as is.

A snapshot keeps each schema exactly as the server sent it; these functions read it before
`orlgen.schema.parser` sanitises it (its declared property order, whether JSON can hold it) and
build the task schema from task specs.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from typing import Any

JSON = dict[str, Any]

MAX_DEPTH = 64  # nesting levels of one schema
MAX_JSON_DEPTH = 200  # nested JSON containers a snapshot may hold in one schema (it stays serialisable)


def json_type(value: Any) -> str:
    """The JSON type of a JSON value (`integer` for 1, `number` for 1.5)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def unique(values: Iterable[Any]) -> Iterator[Any]:
    seen: set[str] = set()
    for value in values:
        key = canonical_json(value)
        if key not in seen:
            seen.add(key)
            yield value


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def escape_pointer(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def unescape_pointer(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def infer_task_schema(specs: Iterable[JSON]) -> JSON:
    """A JSON Schema covering every task spec, independent of the order of the specs."""
    from genson import SchemaBuilder

    builder = SchemaBuilder(schema_uri=False)
    builder.add_schema({"type": "object"})
    for spec in specs:
        builder.add_object(spec)
    return canonical(builder.to_schema())


def canonical(schema: Any) -> Any:
    """Sort the order-free parts of a schema (types, required, anyOf branches) so equal schemas
    compare and serialise equal."""
    if isinstance(schema, list):
        return [canonical(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: canonical(value) for key, value in sorted(schema.items())}
    if isinstance(out.get("type"), list):
        out["type"] = sorted(set(out["type"]))
    if isinstance(out.get("required"), list):
        out["required"] = sorted(set(out["required"]))
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = sorted(out[key], key=lambda s: json.dumps(s, sort_keys=True))
    return out


def json_problem(value: Any) -> str | None:
    """Why a JSON value cannot be stored in a snapshot (nested deeper than `MAX_JSON_DEPTH`, or a
    non-finite number, which JSON cannot hold), checked without recursion: a hostile value may
    be nested deeper than Python's recursion limit."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return f"holds the non-finite number {node}"
        if isinstance(node, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return f"is nested deeper than {MAX_JSON_DEPTH} levels"
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
    return None


def declared_order(schema: Any) -> dict[str, list[str]]:
    """The declared order of properties of every object schema in a raw schema, by JSON pointer
    (what `parse_schema` takes as `order`). Read before the snapshot sorts the keys."""
    found: dict[str, list[str]] = {}

    def walk(node: Any, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}/{i}", depth + 1)
            return
        if not isinstance(node, dict):
            return
        properties = node.get("properties")
        if isinstance(properties, dict) and len(properties) > 1 and all(isinstance(k, str) for k in properties):
            found[path] = list(properties)
        for key, value in node.items():
            if (
                isinstance(key, str)
                and isinstance(value, (dict, list))
                and key not in ("enum", "const", "default", "examples")
            ):
                walk(value, f"{path}/{escape_pointer(key)}", depth + 1)

    walk(schema, "", 0)
    return found
