"""The schema model: every JSON Schema orlgen renders from, parsed once into typed `Node`s.

`Schema.parse` is the sanitising boundary. A schema comes from a server or from a file in a
pull request, so it is hostile until parsed: only the keywords listed in `_KEYWORDS` survive,
references resolve only inside the same schema, cycles and depth are bounded, numbers are
finite, and every keyword that is dropped is recorded (`Schema.dropped`) so the CLI can say so.
Everything downstream (type hints, the prose the model reads, dataset columns, the models handed
to datamodel-code-generator, `orlgen diff`) reads `Node`s, never raw dicts, so they cannot
disagree about what a schema means, and no keyword the generator does not understand (such as
datamodel-code-generator's `customTypePath`, which becomes an import) can reach generated code.

The snapshot keeps the raw schemas exactly as the server sent them; sanitising is part of
rendering, so `check` and `diff` still see the truth.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Annotated, Any

from . import lookalike
from .errors import OrlgenError

JSON = dict[str, Any]

MAX_DEPTH = 64  # nesting levels of one schema
MAX_JSON_DEPTH = 200  # nested JSON containers a snapshot may hold in one schema (it stays serialisable)
MAX_NODES = 100_000  # subschemas in one schema, references followed included
MAX_COUNT = 2**31 - 1  # the largest length/count bound that can hold on a real value
MAX_NUMBER = 10**30  # the largest magnitude of any number kept (bounds, enum values, defaults)

TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
# Constraint keywords in the order prose and the model generator list them.
CONSTRAINTS = _BOUNDS + _COUNTS + ("pattern", "uniqueItems")
# Annotations that only clutter: pydantic puts a title on every property.
_QUIET = frozenset({"title", "$schema", "$comment", "discriminator"})
_STRUCTURE = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "default",
        "format",
        "examples",
        *CONSTRAINTS,
    }
)


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

    @classmethod
    def parse(cls, raw: Any, where: str, order: Mapping[str, Sequence[str]] | None = None) -> Schema:
        """Sanitise and parse `raw`. `order` maps the JSON pointer of an object schema to its
        properties' declared order (snapshots store it apart, their JSON being key-sorted)."""
        return _Parser(raw, where, order or {}).run()

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

    def to_json(self, node: Node, ref: Callable[[str], str]) -> JSON:
        """`node` as plain JSON Schema for datamodel-code-generator: only understood keywords,
        `$ref`s rewritten by `ref(name)`, `format` left out (each becomes a plain type, so no
        generated model masks a password, imports an e-mail validator or parses a decimal), and
        patterns pydantic cannot compile left out (the server still enforces them)."""
        return _emit(node, ref, self)


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
                    self.drop(f"/{key}/{_escape(name)}", key, f"{name!r} is also defined in $defs")
                    continue
                self.def_raw[self.text(name, f"/{key}")] = (sub, f"/{key}/{_escape(name)}")
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
        if "oneOf" in fields:
            branches = fields.pop("oneOf")
            if "any_of" in fields:
                self.drop(path, "oneOf", "a schema with both anyOf and oneOf keeps anyOf")
            else:
                fields["any_of"] = branches
        fields["constraints"] = self.constraints(fields, path)
        self.fit_default(fields, path)
        return Node(**fields)

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
            enum is not None and _canonical_json(fields["default"]) not in {_canonical_json(v) for v in enum}
        )
        if misfit:
            self.drop(path, "default", f"{_short(fields['default'])} does not fit the schema's type")
            del fields["default"], fields["default_json"]

    def keyword(self, fields: dict[str, Any], key: str, value: Any, path: str, depth: int) -> None:
        here = f"{path}/{key}"
        if key == "type":
            declared = [value] if isinstance(value, str) else value
            if not (isinstance(declared, list) and declared and all(t in TYPES for t in declared)):
                self.drop(path, key, f"{_short(value)} is not a JSON type")
                return
            fields["types"] = tuple(dict.fromkeys(declared))
        elif key == "properties":
            fields["properties"] = self.properties(value, path, depth)
        elif key == "required":
            if not (isinstance(value, list) and all(isinstance(name, str) for name in value)):
                raise self.error(here, "must be a list of property names")
            fields["required"] = tuple(dict.fromkeys(self.text(name, here) for name in value))
        elif key == "additionalProperties":
            fields["additional"] = value if isinstance(value, bool) else self.node(value, here, depth + 1)
        elif key == "items":
            if value is False:
                fields["items_closed"] = True
            elif isinstance(value, list):  # draft-04 tuple form
                fields["prefix_items"] = self.many(value, here, depth)
                fields["items_closed"] = True
            elif value is not True:
                fields["items"] = self.node(value, here, depth + 1)
        elif key == "prefixItems":
            fields["prefix_items"] = self.many(value, here, depth)
        elif key == "enum":
            if not isinstance(value, list) or not value:
                self.drop(path, key, "an enum must be a non-empty list")
                return
            fields["enum"] = tuple(_unique(self.value(item, here) for item in value))
        elif key == "const":
            fields["enum"] = (self.value(value, here),)
        elif key in ("anyOf", "oneOf", "allOf"):
            if not isinstance(value, list) or not value:
                self.drop(path, key, "must be a non-empty list of schemas")
                return
            fields[{"anyOf": "any_of", "oneOf": "oneOf", "allOf": "all_of"}[key]] = self.many(value, here, depth)
        elif key == "$ref":
            self.reference(fields, value, path, depth)
        elif key in ("description", "format"):
            if isinstance(value, str):
                fields[key] = self.text(value, here)
            else:
                self.drop(path, key, "must be a string")
        elif key == "default":
            fields["default"] = self.value(value, here)
            fields["default_json"] = _canonical_json(fields["default"])
        elif key == "examples":
            if isinstance(value, list):
                fields["examples"] = tuple(self.value(item, here) for item in value)
            else:
                self.drop(path, key, "must be a list")
        else:
            fields.setdefault("_raw_constraints", {})[key] = value

    def properties(self, value: Any, path: str, depth: int) -> tuple[tuple[str, Node], ...]:
        here = f"{path}/properties"
        if not isinstance(value, dict):
            raise self.error(here, "must be an object of schemas")
        names = [self.text(name, here) for name in value]
        declared = [name for name in self.order.get(path, ()) if name in value]
        ordered = declared + sorted(name for name in names if name not in declared)
        return tuple((name, self.node(value[name], f"{here}/{_escape(name)}", depth + 1)) for name in ordered)

    def many(self, value: Any, path: str, depth: int) -> tuple[Node, ...]:
        if not isinstance(value, list):
            raise self.error(path, "must be a list of schemas")
        return tuple(self.node(item, f"{path}/{i}", depth + 1) for i, item in enumerate(value))

    def reference(self, fields: dict[str, Any], ref: Any, path: str, depth: int) -> None:
        """Local references only: `#`, a definition, or any other pointer into this schema
        (inlined). A file path or URL would make the model generator read it: refused."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise self.error(f"{path}/$ref", f"{_short(ref)} is not a local reference (only '#/...' is allowed)")
        parts = [_unescape(part) for part in ref[1:].split("/")][1:] if ref != "#" else []
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

    def constraints(self, fields: dict[str, Any], path: str) -> tuple[tuple[str, Any], ...]:
        raw = fields.pop("_raw_constraints", {})
        kept: dict[str, Any] = {}
        for key in _BOUNDS:
            value = raw.get(key)
            if value is None:
                continue
            if key.startswith("exclusive") and isinstance(value, bool):  # draft-04: a flag on minimum/maximum
                bound = raw.get("minimum" if key == "exclusiveMinimum" else "maximum")
                if value and _number(bound):
                    kept[key] = bound
                    kept.pop("minimum" if key == "exclusiveMinimum" else "maximum", None)
                continue
            if not _number(value) or (key == "multipleOf" and value <= 0):
                self.drop(path, key, f"{_short(value)} is not a usable bound")
                continue
            kept[key] = value
        for key in _COUNTS:
            value = raw.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
                self.drop(path, key, f"{_short(value)} is not a count that can hold")
                continue
            kept[key] = value
        for low, high in (
            ("minLength", "maxLength"),
            ("minItems", "maxItems"),
            ("minProperties", "maxProperties"),
            ("minimum", "maximum"),
        ):
            if low in kept and high in kept and kept[low] > kept[high]:
                self.drop(path, f"{low}/{high}", f"{kept[low]} > {kept[high]}: no value could satisfy both")
                del kept[low], kept[high]
        pattern = raw.get("pattern")
        if pattern is not None:
            if isinstance(pattern, str):
                kept["pattern"] = self.text(pattern, f"{path}/pattern")
            else:
                self.drop(path, "pattern", "must be a string")
        if raw.get("uniqueItems") is True:
            kept["uniqueItems"] = True
        return tuple((key, kept[key]) for key in CONSTRAINTS if key in kept)


def printable(text: str, limit: int = 200) -> str:
    """Server text fit for a one-line message: control characters escaped, length bounded."""
    shown = lookalike.escaped(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= MAX_NUMBER
    )


def _unique(values: Iterable[Any]) -> Iterator[Any]:
    seen: set[str] = set()
    for value in values:
        key = _canonical_json(value)
        if key not in seen:
            seen.add(key)
            yield value


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def _kind(value: Any) -> str:
    return type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


# --- emission: Node → plain JSON Schema for datamodel-code-generator ------------------------


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
    if node.properties:
        out["properties"] = {name: _emit(sub, ref, schema, field=True) for name, sub in node.properties}
    if node.required:
        out["required"] = list(node.required)
    if isinstance(node.additional, bool):
        out["additionalProperties"] = node.additional
    elif node.additional is not None:
        out["additionalProperties"] = _emit(node.additional, ref, schema)
    if node.prefix_items:
        out["prefixItems"] = [_emit(item, ref, schema) for item in node.prefix_items]
    if node.items is not None:
        out["items"] = _emit(node.items, ref, schema)
    elif node.items_closed and node.prefix_items:
        out["items"] = False
    if node.enum is not None:
        out["enum"] = list(node.enum)
    if node.any_of:
        out["anyOf"] = [_emit(branch, ref, schema) for branch in node.any_of]
    if node.all_of:
        out["allOf"] = [_emit(part, ref, schema) for part in node.all_of]
    if node.description is not None:
        out["description"] = node.description
    for key, value in node.constraints:
        if key != "pattern" or pattern_compiles(value):
            out[key] = value
    if (
        field
        and node.has_default
        and not (isinstance(node.default, dict) and (node.ref is not None or node.properties))
    ):
        # A model's default stays with the server: datamodel-code-generator would write the dict
        # itself as the default of a model-typed field (a type error); unset, nothing is sent.
        out["default"] = node.default
        if node.default is None and not schema.admits_null(node):
            out = _nullable(out)  # pydantic's `x: T = None`: the model must accept the None it defaults to
    return out


def _nullable(out: JSON) -> JSON:
    """An emitted property schema that also admits null: `null` added to a plain type list (a
    union of branches would become a root model holding the field's default), else a branch."""
    plain = isinstance(out.get("type"), str) and out["type"] != "object"
    if plain and not any(key in out for key in ("$ref", "anyOf", "allOf", "enum")):
        return {**out, "type": [out["type"], "null"]}
    inner = {key: value for key, value in out.items() if key not in ("default", "description")}
    usage = {key: out[key] for key in ("default", "description") if key in out}
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
    merged = Node(enum=tuple(_unique(value for branch in bare for value in branch.enum or ())))
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
    if len(node.any_of) != 2 or node.types or node.enum is not None:
        return node
    nulls = [b for b in node.any_of if b == Node(types=("null",))]
    others = [b for b in node.any_of if b != Node(types=("null",))]
    if len(nulls) != 1 or len(others) != 1:
        return node
    other = others[0]
    if (
        other.ref is not None
        or other.any_of
        or other.all_of
        or other.enum is not None
        or not other.types
        or "object" in other.types
    ):  # an object stays a model of its own, shareable with its twins
        return node
    return replace(
        other,
        types=(*other.types, "null"),
        description=node.description if node.description is not None else other.description,
        default=node.default if node.has_default else other.default,
        default_json=node.default_json if node.has_default else other.default_json,
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


# --- task specs ---------------------------------------------------------------------------


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
    (what `Schema.parse` takes as `order`). Read before the snapshot sorts the keys."""
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
                walk(value, f"{path}/{_escape(key)}", depth + 1)

    walk(schema, "", 0)
    return found
