"""Raw schema → `Schema`: the sanitising boundary.

A schema comes from a server or from a file in a pull request, so it is hostile until parsed:
only the keywords listed in `_STRUCTURE` survive, references resolve only inside the same
schema, cycles and depth are bounded, numbers are finite, and every keyword that is dropped is
recorded (`Schema.dropped`) so the CLI can say so. No keyword the generator does not understand
(such as datamodel-code-generator's `customTypePath`, which becomes an import) reaches generated
code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from orlgen.schema.model import ANY, BOUNDS, CONSTRAINTS, COUNTS, Dropped, Node, Schema, SchemaError, printable
from orlgen.schema.raw import MAX_DEPTH, canonical_json, escape_pointer, json_type, unescape_pointer, unique

MAX_NODES = 100_000  # subschemas in one schema, references followed included
MAX_COUNT = 2**31 - 1  # the largest length/count bound that can hold on a real value
MAX_NUMBER = 10**30  # the largest magnitude of any number kept (bounds, enum values, defaults)

TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
# Annotations that only clutter: pydantic puts a title on every property.
_QUIET = frozenset({"title", "$schema", "$comment", "discriminator"})


def parse_schema(raw: Any, where: str, order: Mapping[str, Sequence[str]] | None = None) -> Schema:
    """Sanitise and parse `raw`. `order` maps the JSON pointer of an object schema to its
    properties' declared order (snapshots store it apart, their JSON being key-sorted)."""
    return _Parser(raw, where, order or {}).run()


class _Parser:
    """One pass over a raw schema: each subschema becomes a `Node`, each refusal a
    `SchemaError`, each dropped keyword a `Dropped`."""

    def __init__(self, raw: Any, where: str, order: Mapping[str, Sequence[str]]) -> None:
        self.raw = raw
        self.where = printable(where)
        self.order = order
        self.dropped: dict[tuple[str, str], Dropped] = {}
        self.nodes = 0
        self.defs: dict[str, Node] = {}
        self.def_raw: dict[str, tuple[Any, str]] = {}
        self.inlining: list[str] = []  # local pointers being inlined, to cut cycles

    def run(self) -> Schema:
        if self.raw is None:
            return Schema(ANY, {})
        if not isinstance(self.raw, dict):
            if isinstance(self.raw, bool):
                return Schema(ANY, {})
            raise self.error("", "a schema must be an object")
        for key in ("$defs", "definitions"):
            found = self.raw.get(key)
            if found is None:
                continue
            if not isinstance(found, dict):
                raise self.error(f"/{key}", "must be an object of schemas")
            for name, sub in found.items():
                if name in self.def_raw:
                    self.drop(f"/{key}/{escape_pointer(name)}", key, f"{name!r} is also defined in $defs")
                    continue
                self.def_raw[self.text(name, f"/{key}")] = (sub, f"/{key}/{escape_pointer(name)}")
        for name in sorted(self.def_raw):
            sub, pointer = self.def_raw[name]
            self.defs[name] = self.node(sub, pointer, 1)
        root = self.node(self.raw, "", 0)
        return Schema(root, dict(sorted(self.defs.items())), tuple(self.dropped.values()))

    def error(self, path: str, why: str) -> SchemaError:
        return SchemaError(f"{self.where}: {printable(path or '/')}: {why}")

    def text(self, value: Any, path: str) -> str:
        """A string that can be written as UTF-8: lone surrogates cannot, and are refused."""
        if not isinstance(value, str):
            raise self.error(path, f"{_kind(value)} where a string belongs")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise self.error(path, f"a string holds a lone surrogate (position {exc.start})") from None
        return value

    def drop(self, path: str, keyword: str, why: str) -> None:
        self.dropped.setdefault((path, keyword), Dropped(self.where, path, keyword, why))

    def node(self, raw: Any, path: str, depth: int) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.error(path, f"more than {MAX_NODES} subschemas")
        if depth > MAX_DEPTH:
            raise self.error(path, f"nested deeper than {MAX_DEPTH} levels")
        if raw is True or raw == {}:
            return ANY
        if not isinstance(raw, dict):
            self.drop(path, "(schema)", f"{_kind(raw)} is not a schema; anything is accepted there")
            return ANY
        fields = self.fields(raw, path, depth)
        self.one_of(fields, path)
        fields["constraints"] = self.constraints(fields.pop("_raw_constraints", {}), path)
        self.fit_default(fields, path)
        return Node(**fields)

    def fields(self, raw: dict[Any, Any], path: str, depth: int) -> dict[str, Any]:
        """`Node` fields of each keyword understood, in the raw schema's order; constraints
        raw under `_raw_constraints` (they are checked together, see `constraints`)."""
        fields: dict[str, Any] = {}
        for key, value in raw.items():
            if not isinstance(key, str) or key in _QUIET or key in ("$defs", "definitions"):
                if key in ("$defs", "definitions") and path:
                    self.drop(path, key, "definitions below the root are reachable only by a JSON pointer")
                continue
            if key not in _STRUCTURE:
                self.drop(path, key, "not a keyword orlgen understands")
                continue
            self.keyword(fields, key, value, path, depth)
        return fields

    def one_of(self, fields: dict[str, Any], path: str) -> None:
        """`oneOf` read as `anyOf` (the models cannot check exclusivity; the server does)."""
        if "oneOf" in fields:
            branches = fields.pop("oneOf")
            if "any_of" in fields:
                self.drop(path, "oneOf", "a schema with both anyOf and oneOf keeps anyOf")
            else:
                fields["any_of"] = branches

    def fit_default(self, fields: dict[str, Any], path: str) -> None:
        """A default of another type than the schema's own (`"type": "string", "default": 3`)
        cannot be a Python default of that type: dropped, with a report. A null default stays
        (pydantic's `x: T = None`; the models admit null for it)."""
        if "default" not in fields or fields["default"] is None:
            return
        kind = json_type(fields["default"])
        types = set(fields.get("types", ()))
        enum = fields.get("enum")
        misfit = (types and kind not in types and not (kind == "integer" and "number" in types)) or (
            enum is not None and canonical_json(fields["default"]) not in {canonical_json(v) for v in enum}
        )
        if misfit:
            self.drop(path, "default", f"{_short(fields['default'])} does not fit the schema's type")
            del fields["default"], fields["default_json"]

    def keyword(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        handler = _KEYWORDS.get(key)
        if handler is None:  # a constraint: checked with the others once all are read
            fields.setdefault("_raw_constraints", {})[key] = value
        else:
            handler(self, fields, key, value, path, depth)

    def read_type(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        declared = [value] if isinstance(value, str) else value
        if not (isinstance(declared, list) and declared and all(t in TYPES for t in declared)):
            self.drop(path, key, f"{_short(value)} is not a JSON type")
            return
        fields["types"] = tuple(dict.fromkeys(declared))

    def read_properties(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        fields["properties"] = self.properties(value, path, depth)

    def read_required(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        here = f"{path}/{key}"
        if not (isinstance(value, list) and all(isinstance(name, str) for name in value)):
            raise self.error(here, "must be a list of property names")
        fields["required"] = tuple(dict.fromkeys(self.text(name, here) for name in value))

    def read_additional(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        fields["additional"] = value if isinstance(value, bool) else self.node(value, f"{path}/{key}", depth + 1)

    def read_items(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        here = f"{path}/{key}"
        if value is False:
            fields["items_closed"] = True
        elif isinstance(value, list):  # draft-04 tuple form
            fields["prefix_items"] = self.many(value, here, depth)
            fields["items_closed"] = True
        elif value is not True:
            fields["items"] = self.node(value, here, depth + 1)

    def read_prefix_items(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        fields["prefix_items"] = self.many(value, f"{path}/{key}", depth)

    def read_enum(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        if not isinstance(value, list) or not value:
            self.drop(path, key, "an enum must be a non-empty list")
            return
        fields["enum"] = tuple(unique(self.value(item, f"{path}/{key}") for item in value))

    def read_const(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        fields["enum"] = (self.value(value, f"{path}/{key}"),)

    def read_combination(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        if not isinstance(value, list) or not value:
            self.drop(path, key, "must be a non-empty list of schemas")
            return
        fields[{"anyOf": "any_of", "oneOf": "oneOf", "allOf": "all_of"}[key]] = self.many(value, f"{path}/{key}", depth)

    def read_ref(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        self.reference(fields, value, path, depth)

    def read_string(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        if isinstance(value, str):
            fields[key] = self.text(value, f"{path}/{key}")
        else:
            self.drop(path, key, "must be a string")

    def read_default(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        fields["default"] = self.value(value, f"{path}/{key}")
        fields["default_json"] = canonical_json(fields["default"])

    def read_examples(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        if isinstance(value, list):
            fields["examples"] = tuple(self.value(item, f"{path}/{key}") for item in value)
        else:
            self.drop(path, key, "must be a list")

    def properties(self, value: Any, path: str, depth: int) -> tuple[tuple[str, Node], ...]:
        here = f"{path}/properties"
        if not isinstance(value, dict):
            raise self.error(here, "must be an object of schemas")
        names = [self.text(name, here) for name in value]
        declared = [name for name in self.order.get(path, ()) if name in value]
        ordered = declared + sorted(name for name in names if name not in declared)
        return tuple((name, self.node(value[name], f"{here}/{escape_pointer(name)}", depth + 1)) for name in ordered)

    def many(self, value: Any, path: str, depth: int) -> tuple[Node, ...]:
        if not isinstance(value, list):
            raise self.error(path, "must be a list of schemas")
        return tuple(self.node(item, f"{path}/{i}", depth + 1) for i, item in enumerate(value))

    def reference(self, fields: dict[str, Any], ref: Any, path: str, depth: int) -> None:
        """Local references only: `#`, a definition, or any other pointer into this schema
        (inlined). A file path or URL would make the model generator read it: refused."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise self.error(f"{path}/$ref", f"{_short(ref)} is not a local reference (only '#/...' is allowed)")
        parts = [unescape_pointer(part) for part in ref[1:].split("/")][1:] if ref != "#" else []
        if not parts:
            fields["ref"] = ""
        elif len(parts) == 2 and parts[0] in ("$defs", "definitions") and parts[1] in self.def_raw:
            fields["ref"] = parts[1]
        else:
            fields.update(self.inline(ref, parts, path, depth))

    def inline(self, ref: str, parts: list[str], path: str, depth: int) -> dict[str, Any]:
        target: Any = self.raw
        for part in parts:
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                raise self.error(f"{path}/$ref", f"{_short(ref)} points nowhere")
        if ref in self.inlining:
            self.drop(
                path, "$ref", f"{_short(ref)} refers to itself through a JSON pointer; anything is accepted there"
            )
            return {}
        self.inlining.append(ref)
        try:
            node = self.node(target, ref[1:], depth + 1)
        finally:
            self.inlining.pop()
        return {
            name: getattr(node, name) for name in node.__dataclass_fields__ if getattr(node, name) != getattr(ANY, name)
        }

    def value(self, value: Any, path: str) -> Any:
        """A JSON value kept from the schema (enum member, const, default, example): finite
        numbers of sane size, strings that can be written as UTF-8."""
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, (int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise self.error(path, f"{value} is not a finite number")
            if abs(value) > MAX_NUMBER:
                raise self.error(path, "a number of magnitude above 1e30 is not supported")
            return value
        if isinstance(value, str):
            return self.text(value, path)
        if isinstance(value, list):
            return [self.value(item, path) for item in value]
        if isinstance(value, dict):
            return {self.text(key, path): self.value(item, path) for key, item in value.items()}
        raise self.error(path, f"{_kind(value)} is not a JSON value")

    def constraints(self, raw: dict[str, Any], path: str) -> tuple[tuple[str, Any], ...]:
        """The constraint keywords that can hold, in `CONSTRAINTS` order; each other one dropped."""
        kept: dict[str, Any] = {}
        self.bounds(raw, path, kept)
        self.counts(raw, path, kept)
        self.satisfiable(path, kept)
        pattern = raw.get("pattern")
        if pattern is not None:
            if isinstance(pattern, str):
                kept["pattern"] = self.text(pattern, f"{path}/pattern")
            else:
                self.drop(path, "pattern", "must be a string")
        if raw.get("uniqueItems") is True:
            kept["uniqueItems"] = True
        return tuple((key, kept[key]) for key in CONSTRAINTS if key in kept)

    def bounds(self, raw: dict[str, Any], path: str, kept: dict[str, Any]) -> None:
        for key in BOUNDS:
            value = raw.get(key)
            if value is None:
                continue
            if key.startswith("exclusive") and isinstance(value, bool):  # draft-04: a flag on minimum/maximum
                _exclusive_flag(raw, key, value, kept)
                continue
            if not _number(value) or (key == "multipleOf" and value <= 0):
                self.drop(path, key, f"{_short(value)} is not a usable bound")
                continue
            kept[key] = value

    def counts(self, raw: dict[str, Any], path: str, kept: dict[str, Any]) -> None:
        for key in COUNTS:
            value = raw.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
                self.drop(path, key, f"{_short(value)} is not a count that can hold")
                continue
            kept[key] = value

    def satisfiable(self, path: str, kept: dict[str, Any]) -> None:
        """A lower bound above its upper bound: no value could satisfy both, so both go."""
        for low, high in _PAIRS:
            if low in kept and high in kept and kept[low] > kept[high]:
                self.drop(path, f"{low}/{high}", f"{kept[low]} > {kept[high]}: no value could satisfy both")
                del kept[low], kept[high]


_Handler = Callable[[_Parser, dict[str, Any], str, Any, str, int], None]
# What each keyword but the constraints and definitions becomes in a `Node`.
_KEYWORDS: dict[str, _Handler] = {
    "type": _Parser.read_type,
    "properties": _Parser.read_properties,
    "required": _Parser.read_required,
    "additionalProperties": _Parser.read_additional,
    "items": _Parser.read_items,
    "prefixItems": _Parser.read_prefix_items,
    "enum": _Parser.read_enum,
    "const": _Parser.read_const,
    "anyOf": _Parser.read_combination,
    "oneOf": _Parser.read_combination,
    "allOf": _Parser.read_combination,
    "$ref": _Parser.read_ref,
    "description": _Parser.read_string,
    "format": _Parser.read_string,
    "default": _Parser.read_default,
    "examples": _Parser.read_examples,
}
# Every keyword the parser keeps; the others are dropped, with a report.
_STRUCTURE = frozenset({*_KEYWORDS, "$defs", "definitions", *CONSTRAINTS})
# The lower and upper bound of one quantity.
_PAIRS = (
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
    ("minProperties", "maxProperties"),
    ("minimum", "maximum"),
)


def _exclusive_flag(raw: dict[str, Any], key: str, flag: bool, kept: dict[str, Any]) -> None:
    """Draft-04's `exclusiveMinimum: true` beside `minimum: m` is today's `exclusiveMinimum: m`."""
    plain = "minimum" if key == "exclusiveMinimum" else "maximum"
    bound = raw.get(plain)
    if flag and _number(bound):
        kept[key] = bound
        kept.pop(plain, None)


def _number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= MAX_NUMBER
    )


def _kind(value: Any) -> str:
    return type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
