"""The schema model, construct by construct: what survives the sanitiser, what the model reads
(hints, prose), and what reaches datamodel-code-generator. Tables of (schema, expected) pairs;
each expected value was written by hand from the JSON Schema meaning, not copied from output."""

from __future__ import annotations

import math

import pytest
from orlgen.plan import prose
from orlgen.plan.emit import emit_json
from orlgen.plan.hints import python_hint
from orlgen.schema import SchemaError, parse_schema

from tests.test_fuzz import GENERATOR_EXTENSIONS, VOCABULARY

# The keywords orlgen models, written out here as the specification the sanitiser must follow.
UNDERSTOOD = set(
    """type properties required additionalProperties items prefixItems enum const anyOf oneOf allOf $ref $defs
    definitions description default format examples minimum maximum exclusiveMinimum exclusiveMaximum multipleOf
    minLength maxLength minItems maxItems minProperties maxProperties pattern uniqueItems""".split()
)
QUIET = {"title", "$schema", "$comment", "discriminator"}

OBJ = "object"


def parse(raw, order=None):
    return parse_schema(raw, "tool 't'", order)


def hint(sub, defs=None):
    schema = parse({"$defs": defs or {}, **sub})
    return python_hint(schema.root, schema)


@pytest.mark.parametrize(
    ("sub", "expected"),
    [
        ({"type": "string"}, "str"),
        ({"type": "integer"}, "int"),
        ({"type": "number"}, "float"),
        ({"type": "boolean"}, "bool"),
        ({"type": "null"}, "Any"),
        ({}, "Any"),
        ({"type": ["string", "null"]}, "str | None"),
        ({"type": ["integer", "string"]}, "int | str"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "str | None"),
        ({"oneOf": [{"type": "integer"}, {"type": "boolean"}]}, "int | bool"),
        ({"allOf": [{"type": "string"}]}, "str"),
        ({"enum": ["a", "b"]}, "Literal['a', 'b']"),
        ({"enum": ["a", None]}, "Literal['a'] | None"),
        ({"const": 3}, "Literal[3]"),
        ({"enum": [{"x": 1}]}, "Any"),
        ({"type": "array", "items": {"type": "string"}}, "list[str]"),
        ({"type": "array"}, "JSONArray"),
        (
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
            "tuple[int, str]",
        ),
        ({"type": "array", "items": [{"type": "integer"}, {"type": "integer"}]}, "tuple[int, int]"),  # draft-04
        (
            {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}], "maxItems": 2},
            "tuple[int, int]",
        ),
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "JSONObject"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
        ({"type": "object"}, "JSONObject"),
        ({"$ref": "#/$defs/A"}, "str"),
        ({"$ref": "#/definitions/B"}, "int"),
        ({"$ref": "#/$defs/Tree"}, "JSONObject"),
    ],
)
def test_hints(sub, expected):
    defs = {
        "A": {"type": "string"},
        "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
    }
    schema = parse({"$defs": defs, "definitions": {"B": {"type": "integer"}}, **sub})
    assert python_hint(schema.root, schema) == expected


def test_properties_keep_the_declared_order_given_apart():
    raw = {"type": OBJ, "properties": {"column": {}, "letter": {}, "row": {}}}
    assert [name for name, _ in parse(raw).root.properties] == ["column", "letter", "row"]
    ordered = parse(raw, {"": ["row", "column", "letter"]})
    assert [name for name, _ in ordered.root.properties] == ["row", "column", "letter"]


# Every keyword the fuzz suite draws that orlgen does not model (the rest have rows above).
NOT_MODELLED = [*sorted(set(VOCABULARY + GENERATOR_EXTENSIONS) - UNDERSTOOD - QUIET), "x-anything"]


@pytest.mark.parametrize("keyword", NOT_MODELLED)
def test_unknown_keywords_are_dropped_and_reported(keyword):
    raw = {"type": OBJ, "properties": {"a": {"type": "string", keyword: "os.system"}}}
    schema = parse(raw)
    emitted = emit_json(schema, schema.root, lambda name: f"#/$defs/{name}")
    assert keyword not in str(emitted)
    assert [(d.path, d.keyword) for d in schema.dropped] == [("/properties/a", keyword)]


def test_pydantic_noise_is_dropped_quietly():
    raw = {"title": "P", "type": OBJ, "properties": {"a": {"title": "A", "type": "string"}}, "$schema": "x"}
    assert parse(raw).dropped == ()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"$ref": "other.json#/x"}, "is not a local reference"),
        ({"$ref": "https://example.com/s.json"}, "is not a local reference"),
        ({"$ref": "#/$defs/Missing"}, "points nowhere"),
        ({"enum": [math.nan]}, "not a finite number"),
        ({"default": math.inf}, "not a finite number"),
        ({"const": 10**40}, "magnitude"),
        ({"description": "bad \ud800 text"}, "lone surrogate"),
        ({"properties": {"\udcff": {}}}, "lone surrogate"),
        ({"required": "a"}, "must be a list"),
    ],
)
def test_refusals_name_the_problem(raw, message):
    with pytest.raises(SchemaError, match=message) as failure:
        parse(raw)
    assert str(failure.value).startswith("tool 't': ") and "\n" not in str(failure.value)


def test_depth_is_bounded():
    raw: dict = {"type": "string"}
    for _ in range(300):
        raw = {"type": "array", "items": raw}
    with pytest.raises(SchemaError, match="nested deeper than"):
        parse(raw)


def test_reference_cycles_end():
    schema = parse({"$ref": "#"})
    assert python_hint(schema.root, schema) == "Any"
    pointer = parse({"type": OBJ, "properties": {"a": {"$ref": "#/properties/a"}}})
    assert any(d.keyword == "$ref" for d in pointer.dropped)


def test_a_pointer_reference_is_inlined():
    schema = parse({"type": OBJ, "properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}}})
    assert python_hint(dict(schema.root.properties)["b"], schema) == "int"


@pytest.mark.parametrize(
    ("sub", "expected"),
    [
        ({"type": "string", "minLength": 1}, ["at least 1 character"]),
        ({"type": "string", "minLength": 2, "maxLength": 2}, ["exactly 2 characters"]),
        ({"type": "string", "maxLength": 1}, ["at most 1 character"]),
        ({"type": "array", "minItems": 2, "maxItems": 2}, ["exactly 2 items"]),
        ({"type": "array", "minItems": 1, "uniqueItems": True}, ["at least 1 item", "unique items"]),
        ({"type": "object", "maxProperties": 3}, ["at most 3 entries"]),
        ({"type": "integer", "minimum": 1, "maximum": 3}, [">= 1", "<= 3"]),
        ({"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}, ["> 0", "a multiple of 0.5"]),
        ({"type": "number", "minimum": 0, "exclusiveMinimum": True}, ["> 0"]),  # draft-04
        ({"type": "string", "pattern": "^a+$", "format": "email"}, ["matching `^a+$`", "format email"]),
        ({"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}, ["at least 1 character"]),
        ({"type": "string", "minLength": 0}, []),
    ],
)
def test_constraint_prose(sub, expected):
    schema = parse(sub)
    assert prose.constraints(schema.root, schema) == expected


@pytest.mark.parametrize(
    ("sub", "why"),
    [
        ({"type": "string", "minLength": -1}, "not a count that can hold"),
        ({"type": "string", "maxLength": 2**40}, "not a count that can hold"),
        ({"type": "string", "minLength": 5, "maxLength": 2}, "no value could satisfy both"),
        ({"type": "number", "multipleOf": 0}, "not a usable bound"),
        ({"type": "number", "maximum": "ten"}, "not a usable bound"),
    ],
)
def test_constraints_that_cannot_hold_are_dropped(sub, why):
    schema = parse(sub)
    assert schema.root.constraints == ()
    assert any(why in d.why for d in schema.dropped)


@pytest.mark.parametrize(
    ("sub", "expected"),
    [
        ({"type": OBJ, "properties": {"a": {"type": "string"}}, "required": ["a"]}, "{a: string}"),
        ({"type": OBJ, "properties": {"a": {"type": "integer", "default": 10}}}, "{a?: integer = 10}"),
        ({"type": OBJ, "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}, "{a?: string | null}"),
        ({"type": OBJ, "properties": {"c": {"enum": ["US", "DE"]}}, "required": ["c"]}, '{c: "US" | "DE"}'),
        (
            {
                "type": "array",
                "items": {"type": OBJ, "properties": {"n": {"type": "array", "items": {"type": "number"}}}},
            },
            "[{n?: [number]}]",
        ),
        ({"type": "array", "items": {"type": "string"}}, None),
    ],
)
def test_structure_text(sub, expected):
    schema = parse(sub)
    assert prose.structure(schema.root, schema) == expected


def test_emitted_schema_has_no_format_and_no_uncompilable_pattern():
    schema = parse(
        {
            "type": OBJ,
            "properties": {
                "p": {"type": "string", "format": "password"},
                "e": {"type": "string", "format": "email"},
                "r": {"type": "string", "pattern": "(?<=a)b+(?P<x"},
            },
        }
    )
    emitted = emit_json(schema, schema.root, str)
    assert emitted["properties"] == {"p": {"type": "string"}, "e": {"type": "string"}, "r": {"type": "string"}}


def test_a_null_default_on_a_non_nullable_type_admits_null():
    """pydantic's `x: tuple[int, int] = None`: the model must accept the None it defaults to."""
    schema = parse({"type": OBJ, "properties": {"x": {"type": "integer", "default": None}}})
    emitted = emit_json(schema, schema.root, str)["properties"]["x"]
    assert emitted == {"type": ["integer", "null"], "default": None}


def test_definitions_resolve_with_the_referrers_description():
    schema = parse(
        {
            "$defs": {"A": {"type": "string", "description": "An A."}},
            "properties": {"a": {"$ref": "#/$defs/A", "description": "This a."}, "b": {"$ref": "#/$defs/A"}},
        }
    )
    props = dict(schema.root.properties)
    assert schema.resolve(props["a"]).description == "This a."
    assert schema.resolve(props["b"]).description == "An A."
