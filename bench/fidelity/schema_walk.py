"""Reading a tool's input JSON Schema: alternatives, types, enum values, constraints, nested fields."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from orlgen.schema import json_type

NESTED_DEPTH = 3
CONSTRAINT_KEYS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)

JSON = dict[str, Any]


def _resolve(schema: Any, root: JSON) -> Any:
    if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
        return schema
    node: Any = root
    for part in schema["$ref"].lstrip("#").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def concrete_branches(schema: Any, root: JSON, seen: frozenset[str] = frozenset()) -> list[JSON]:
    """The concrete alternatives of a schema: `$ref`s followed, anyOf/oneOf/allOf[1] flattened."""
    if not isinstance(schema, dict):
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return []
        return concrete_branches(_resolve(schema, root), root, seen | {ref})
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        return [b for alt in alternatives for b in concrete_branches(alt, root, seen)]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return concrete_branches(all_of[0], root, seen)
    return [schema]


def schema_types(schema: Any, root: JSON) -> set[str]:
    """The JSON types a schema admits (`null` included); empty = anything."""
    if schema is True or schema == {} or not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    branches = concrete_branches(schema, root)
    if not branches:  # a reference cycle: whatever the definition is
        return {"object"}
    for b in branches:
        types = _branch_types(b)
        if types is None:
            return set()
        found |= types
    return found


def _branch_types(b: JSON) -> set[str] | None:
    """The JSON types one concrete alternative admits; None = anything."""
    if "const" in b:
        return {json_type(b["const"])}
    if isinstance(b.get("enum"), list):
        return {json_type(v) for v in b["enum"]}
    if isinstance(b.get("type"), str):
        return {b["type"]}
    if isinstance(b.get("type"), list):
        return set(b["type"])
    if "properties" in b:
        return {"object"}
    if "items" in b or "prefixItems" in b:
        return {"array"}
    return None


def is_array(b: JSON) -> bool:
    return b.get("type") == "array" or "items" in b or "prefixItems" in b


def enum_values(branches: list[JSON]) -> list[Any]:
    values = []
    for b in branches:
        if "const" in b:
            values.append(b["const"])
        elif isinstance(b.get("enum"), list):
            values.extend(b["enum"])
    unique = {json.dumps(v, sort_keys=True): v for v in values if v is not None}
    return list(unique.values())


@dataclass
class NestedField:
    """What the schema says about one nested property: its types, the siblings it sits among,
    and its own words and limits (description, constraint keywords, default)."""

    types: set[str] = field(default_factory=set)
    siblings: tuple[str, ...] = ()
    description: str = ""
    constraints: dict[tuple[str, str], Any] = field(default_factory=dict)
    default: list[Any] = field(default_factory=list)  # [value] when the property has one

    def merge(self, other: NestedField) -> None:
        self.types |= other.types
        self.siblings = tuple(dict.fromkeys(self.siblings + other.siblings))
        self.description = self.description or other.description
        for key, value in other.constraints.items():
            self.constraints.setdefault(key, value)
        self.default = self.default or other.default


def constraints_of(branches: list[JSON]) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    for b in branches:
        for key in CONSTRAINT_KEYS:
            value = b.get(key)
            if key in b and value is not False and not (key.startswith("exclusive") and value is True):
                found.setdefault((key, json.dumps(value)), value)
    return found


def description_of(sub: Any, root: JSON) -> str:
    """A property's own `description`, else the one of the definition it `$ref`s."""
    description = sub.get("description") if isinstance(sub, dict) else None
    if not description and isinstance(sub, dict) and "$ref" in sub:
        description = (_resolve(sub, root) or {}).get("description")
    return description.strip() if isinstance(description, str) else ""


def nested_fields(schema: Any, root: JSON, prefix: str, depth: int, seen: frozenset[str]) -> dict[str, NestedField]:
    """Nested property path → what the schema says of it, through refs, anyOf and array items;
    cycles stop."""
    if not isinstance(schema, dict) or depth > NESTED_DEPTH:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return {} if ref in seen else nested_fields(_resolve(schema, root), root, prefix, depth, seen | {ref})
    out: dict[str, NestedField] = {}
    for alt in (schema.get("anyOf") or schema.get("oneOf") or []) + (schema.get("allOf") or []):
        _merge(out, nested_fields(alt, root, prefix, depth, seen))
    properties = schema.get("properties")
    if isinstance(properties, dict) and depth < NESTED_DEPTH:
        _merge(out, _properties(properties, root, prefix, depth, seen))
    items = schema.get("items")
    if isinstance(items, dict):
        _merge(out, nested_fields(items, root, f"{prefix}[]", depth, seen))
    return out


def _properties(properties: JSON, root: JSON, prefix: str, depth: int, seen: frozenset[str]) -> dict[str, NestedField]:
    """Each property of an object, then what is nested below it."""
    out: dict[str, NestedField] = {}
    for name, sub in properties.items():
        path = f"{prefix}.{name}"
        info = NestedField(
            types=schema_types(sub, root) - {"null"} or {"any"},
            siblings=tuple(n for n in properties if n != name),
            description=description_of(sub, root),
            constraints=constraints_of(concrete_branches(sub, root)),
            default=[sub["default"]] if isinstance(sub, dict) and "default" in sub else [],
        )
        _merge(out, {path: info})
        _merge(out, nested_fields(sub, root, path, depth + 1, seen))
    return out


def _merge(out: dict[str, NestedField], found: dict[str, NestedField]) -> None:
    for path, info in found.items():
        out.setdefault(path, NestedField()).merge(info)
