"""JSON Schema helpers: safety checks, canonical form, task-schema inference, Python hints.

Everything here is a pure function of its input. Schemas come from the server, so they are
treated as hostile: remote `$ref`s are refused before any other tool sees them, and reference
cycles end in `Any` instead of recursion.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .errors import OrlgenError

JSON = dict[str, Any]

# Keywords whose value is one subschema / a list of them / a name → subschema map.
_ONE = ("additionalProperties", "items", "not", "contains", "if", "then", "else", "propertyNames",
        "unevaluatedProperties", "unevaluatedItems", "additionalItems")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")

_SCALAR_HINTS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}


class SchemaError(OrlgenError, ValueError):
    """A schema orlgen refuses to generate code from."""


def subschemas(schema: Any) -> Iterator[Any]:
    """Every direct subschema of `schema` (boolean schemas included)."""
    if not isinstance(schema, dict):
        return
    for key in _ONE:
        if isinstance(schema.get(key), (dict, bool)):
            yield schema[key]
    for key in _MANY:
        if isinstance(schema.get(key), list):
            yield from schema[key]
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            yield from schema[key].values()


def check_refs(schema: Any, where: str) -> None:
    """Refuse every `$ref` that is not a local pointer: dcg would read files or URLs for them."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
            raise SchemaError(f"{where}: $ref {ref!r} is not a local reference (only '#/...' is allowed)")
    for sub in subschemas(schema):
        check_refs(sub, where)


def strip_keywords(schema: Any, drop: Callable[[str, Any], bool]) -> Any:
    """A copy of `schema` without the keywords for which `drop(keyword, value)` is true.

    Only keywords are dropped: a property *named* like one (`title`, `pattern`) is kept.
    """
    if not isinstance(schema, dict):
        return schema
    out: JSON = {}
    for key, value in schema.items():
        if drop(key, value):
            continue
        if key in _MAP and isinstance(value, dict):
            out[key] = {name: strip_keywords(sub, drop) for name, sub in value.items()}
        elif key in _MANY and isinstance(value, list):
            out[key] = [strip_keywords(sub, drop) for sub in value]
        elif key in _ONE and isinstance(value, dict):
            out[key] = strip_keywords(value, drop)
        else:
            out[key] = value
    return out


def without_titles(schema: Any) -> Any:
    """Drop `title` keywords: pydantic adds one to every property, and they only add noise."""
    return strip_keywords(schema, lambda key, _: key == "title")


def resolve(schema: Any, root: JSON) -> Any:
    """Follow a local `$ref` (one step) against `root`; other schemas come back unchanged."""
    if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
        return schema
    node: Any = root
    for part in schema["$ref"].lstrip("#").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise SchemaError(f"$ref {schema['$ref']!r} points nowhere")
        node = node[part]
    return node


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


def json_types(schema: Any, root: JSON, _seen: frozenset[str] = frozenset()) -> set[str]:
    """The JSON types a schema admits (`string`, `object`, ...); empty means anything."""
    if schema is True or schema == {}:
        return set()
    if not isinstance(schema, dict):
        return set()
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in _seen:
            return set()
        return json_types(resolve(schema, root), root, _seen | {ref})
    if "const" in schema:
        return {_type_of(schema["const"])}
    if isinstance(schema.get("enum"), list):
        return {_type_of(value) for value in schema["enum"]}
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list):
        found: set[str] = set()
        for branch in branches:
            types = json_types(branch, root, _seen)
            if not types:
                return set()
            found |= types
        return found
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return json_types(schema["allOf"][0], root, _seen)
    if "properties" in schema:
        return {"object"}
    if "items" in schema or "prefixItems" in schema:
        return {"array"}
    return set()


def _type_of(value: Any) -> str:
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
    if isinstance(value, list):
        return "array"
    return "object"


def python_hint(schema: Any, root: JSON) -> str:
    """A type hint, as source text, that `transformers.utils.get_json_schema` can turn back into
    JSON Schema: builtins, `Literal`, `Any`, `list[T]`, `tuple[A, B]`, `dict[str, V]`, unions.

    Objects with named properties become `dict`: no hint it accepts can say more. Their
    structure goes into the parameter description instead.
    """
    return _join(_members(schema, root, frozenset()))


def _join(members: list[str]) -> str:
    """Union members → hint text: `Any` absorbs everything, `None` goes last, no repeats."""
    unique = list(dict.fromkeys(members))
    if not unique or "Any" in unique or unique == ["None"]:  # `list[None]` is no hint get_json_schema reads
        return "Any"
    return " | ".join([m for m in unique if m != "None"] + (["None"] if "None" in unique else []))


def _members(schema: Any, root: JSON, seen: frozenset[str]) -> list[str]:
    """The union members of the hint for `schema` (one member for a non-union)."""
    if not isinstance(schema, dict) or schema == {}:
        return ["Any"]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:  # a recursive model: the cycle ends in a plain dict
            return ["dict"] if json_types(resolve(schema, root), root) == {"object"} else ["Any"]
        return _members(resolve(schema, root), root, seen | {ref})
    if "const" in schema:
        return _literal([schema["const"]])
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return _literal(schema["enum"])
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        return [m for branch in branches for m in _members(branch, root, seen)]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return _members(all_of[0], root, seen)
    declared = schema.get("type")
    if isinstance(declared, list):
        return [m for t in declared for m in _members({**schema, "type": t}, root, seen)]
    if declared in _SCALAR_HINTS:
        return [_SCALAR_HINTS[declared]]
    if declared == "array" or "items" in schema or "prefixItems" in schema:
        return [_array_hint(schema, root, seen)]
    if declared == "object" or "properties" in schema or isinstance(all_of, list):
        return [_object_hint(schema, root, seen)]
    return ["Any"]


def _literal(values: list[Any]) -> list[str]:
    if not all(isinstance(v, (str, int, float, bool)) or v is None for v in values):
        return ["Any"]
    members = [v for v in dict.fromkeys(values) if v is not None]
    literal = [f"Literal[{', '.join(repr(v) for v in members)}]"] if members else []
    return literal + (["None"] if None in values else [])


def _array_hint(schema: JSON, root: JSON, seen: frozenset[str]) -> str:
    fixed = schema.get("prefixItems")
    if fixed is None and isinstance(schema.get("items"), list):
        fixed = schema["items"]  # draft-04 tuple form
    if isinstance(fixed, list) and len(fixed) >= 2:
        closed = schema.get("items") is False or schema.get("maxItems") == len(fixed) or "prefixItems" not in schema
        if closed:
            return f"tuple[{', '.join(_join(_members(item, root, seen)) for item in fixed)}]"
    items = schema.get("items")
    if isinstance(items, dict):
        return f"list[{_join(_members(items, root, seen))}]"
    return "list"


def _object_hint(schema: JSON, root: JSON, seen: frozenset[str]) -> str:
    extra = schema.get("additionalProperties")
    if not schema.get("properties") and isinstance(extra, dict) and extra:
        return f"dict[str, {_join(_members(extra, root, seen))}]"
    return "dict"


_CONSTRAINTS = (
    ("minimum", ">= {}"), ("maximum", "<= {}"), ("exclusiveMinimum", "> {}"), ("exclusiveMaximum", "< {}"),
    ("multipleOf", "multiple of {}"), ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"), ("pattern", "matching {}"), ("format", "format {}"),
    ("minItems", "at least {} items"), ("maxItems", "at most {} items"), ("uniqueItems", "unique items"),
    ("minProperties", "at least {} entries"), ("maxProperties", "at most {} entries"),
)


def constraints(schema: Any, root: JSON) -> list[str]:
    """Human-readable constraints of one schema (`>= 1`, `at most 50 characters`, ...)."""
    schema = resolve(schema, root)
    if not isinstance(schema, dict):
        return []
    found = []
    for key, template in _CONSTRAINTS:
        value = schema.get(key)
        if value is None or value is False or (key == "exclusiveMinimum" and value is True):
            continue
        found.append(template.format(f"`{value}`" if key == "pattern" else value))
    for branch in schema.get("anyOf") or schema.get("oneOf") or []:
        found += [c for c in constraints(branch, root) if c not in found]
    return found


def shape(schema: Any, root: JSON, depth: int = 0, _seen: frozenset[str] = frozenset()) -> str:
    """A compact, one-line description of a value's structure, for objects a hint cannot show.

    `{street: str, country: "US" | "DE", lines?: [str]}`: `?` marks an optional field.
    """
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        if ref in _seen:
            return f"<{ref.rsplit('/', 1)[-1]}>"
        return shape(resolve(schema, root), root, depth, _seen | {ref})
    if not isinstance(schema, dict):
        return "any"
    branches = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(branches, list) and branches:
        return " | ".join(dict.fromkeys(shape(b, root, depth, _seen) for b in branches))
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return shape(schema["allOf"][0], root, depth, _seen)
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        if depth >= 4:
            return "{...}"
        required = set(schema.get("required") or [])
        fields = [
            f"{name}{'' if name in required else '?'}: {shape(sub, root, depth + 1, _seen)}"
            for name, sub in properties.items()
        ]
        return "{" + ", ".join(fields) + "}"
    items = schema.get("items")
    if isinstance(items, dict):
        return f"[{shape(items, root, depth + 1, _seen)}]"
    hint = python_hint(schema, root)
    return {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null"}.get(hint, hint)
