"""The plan, decision by decision: parameter names, order, defaults and descriptions, the tool
docstring, and the shared models. Each row's expected value was written by hand."""

from __future__ import annotations

import pytest
from orlgen import names
from orlgen.plan import docstrings
from orlgen.plan.planner import plan
from orlgen.snapshot.model import Snapshot, Split, Target, Tool
from orlgen.trainers.trl.layout import tool_docstring


def snapshot(*tools: Tool, task_schema: dict | None = None) -> Snapshot:
    return Snapshot(
        name="demo",
        target=Target(kind="url", value="http://127.0.0.1:1", env="demo"),
        splits=[Split(name="train", num_tasks=0)],
        tools=list(tools),
        terminal_tool=None,
        probed_tasks=[],
        tasks={},
        task_schema=task_schema or {"type": "object"},
    )


def tool(schema: dict | None, description: str = "Do it.", name: str = "act") -> Tool:
    return Tool(name=name, description=description, input_schema=schema, shared=True)


def only_tool(*args, **kwargs):
    return plan(snapshot(tool(*args, **kwargs))).tools[0]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        (["row", "column", "letter"], ["row", "column", "letter"]),
        (["from", "from_"], ["from_2", "from_"]),  # the valid name is kept; the keyword renamed around it
        (["名前"], ["名前"]),
        (["ﬁle"], ["file"]),  # Python would read `ﬁle` as `file`: renamed to what it reads
        (["file-path", "file_path"], ["file_path_", "file_path"]),
        (["type", "match", "_x"], ["type", "match", "_x"]),  # soft keywords are fine parameter names
        (["self"], ["self_"]),
        (["class", "2d"], ["class_", "n2d"]),
    ],
)
def test_parameter_names(wire, expected):
    assert names.param_names(wire, taken={"self"}) == expected


def test_parameters_keep_the_declared_order_and_defaults():
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "status": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "point": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "integer"}],
                "minItems": 2,
                "maxItems": 2,
                "default": None,
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["query"],
    }
    planned = plan(
        snapshot(
            Tool(
                name="find",
                description="Find.",
                input_schema=schema,
                shared=True,
                property_order={"": ["query", "limit", "status", "point", "tags"]},
            )
        )
    )
    params = [(p.name, p.hint, p.default) for p in planned.tools[0].params]
    assert params == [
        ("query", "str", None),
        ("limit", "int", "10"),
        ("status", "str | None", "None"),
        ("point", "tuple[int, int] | None", "None"),
        ("tags", "list[str]", "UNSET"),
    ]


GOOGLE = """Place a letter on the grid.

    The grid is 5x5.

    Args:
        row: Row index, from 0.
        column (int): Column index,
            from 0.
        letter: One upper-case letter.

    Returns:
        The grid after the move.

    Raises:
        ValueError: when the cell is taken.
    """


def test_a_google_docstring_becomes_one_description_per_parameter():
    schema = {
        "type": "object",
        "properties": {
            "row": {"type": "integer"},
            "column": {"type": "integer"},
            "letter": {"type": "string", "description": "The letter to place."},
        },
    }
    planned = plan(
        snapshot(
            Tool(
                name="place_letter",
                description=GOOGLE,
                input_schema=schema,
                shared=True,
                property_order={"": ["row", "column", "letter"]},
            )
        )
    )
    doc = tool_docstring(planned.tools[0])
    assert doc.count("Args:") == 1 and "Args :" not in doc
    assert "row: Row index, from 0." in doc
    assert "column: Column index, from 0." in doc
    assert "letter: The letter to place." in doc and "One upper-case" not in doc  # the schema's words win
    assert "Returns:\n            The grid after the move." in doc
    assert "Fails with ValueError: when the cell is taken." in doc
    assert doc.index("row:") < doc.index("column:") < doc.index("letter:")


@pytest.mark.parametrize(
    ("text", "prose", "params", "returns"),
    [
        ("Echo.\n\nArgs:\n    text: The string to echo back.", "Echo.", {"text": "The string to echo back."}, ""),
        ("Edit.\n\nParameters\n----------\nfile_path : str\n    The file.\n", "Edit.", {"file_path": "The file."}, ""),
        ("Go.\n\n:param speed: How fast.\n:returns: Where.", "Go.", {"speed": "How fast."}, "Where."),
        ("No sections: Args are described elsewhere.", "No sections: Args are described elsewhere.", {}, ""),
    ],
)
def test_docstring_styles(text, prose, params, returns):
    parsed = docstrings.parse(text)
    assert (parsed.prose, parsed.params, parsed.returns) == (prose, params, returns)


@pytest.mark.parametrize(
    ("text", "prose", "params", "returns"),
    [
        pytest.param(
            "Set a pump.\n\npump_id: Which pump.\nrate: Rate in ml/h,\n    up to 999.\n\nNote: it stays set.",
            "Set a pump.\n\nNote: it stays set.",
            {"pump_id": "Which pump.", "rate": "Rate in ml/h, up to 999."},
            "",
            id="un-headed name: text lines",
        ),
        pytest.param(
            "Find.\n\n- `query` (str): What to find.\n- limit - How many.",
            "Find.",
            {"query": "What to find.", "limit": "How many."},
            "",
            id="un-headed bullets",
        ),
        pytest.param(
            "Find.\nargs:\nquery: What to find.\nlimit: How many.\n\nreturns:\nThe hits.",
            "Find.",
            {"query": "What to find.", "limit": "How many."},
            "The hits.",
            id="lower-case headers, flush bodies",
        ),
        pytest.param(
            "Find.\n\n## Parameters\n- `query`: What to find.\n\n**Returns:**\n    The hits.",
            "Find.",
            {"query": "What to find."},
            "The hits.",
            id="markdown headers",
        ),
        pytest.param(
            "Find.\n\nArgs:\n    query: From Args.\n\nquery: A second time.",
            "Find.\n\nquery: A second time.",
            {"query": "From Args."},
            "",
            id="documented once: the section wins",
        ),
        pytest.param(
            "Find.\n\n:param str query: What to find.\n:type query: str\n@param limit: How many.\n:rtype: list",
            "Find.",
            {"query": "What to find.", "limit": "How many."},
            "",
            id="reST with types, epytext",
        ),
        pytest.param(
            "Note: limit: applies.\nmode: not a parameter.",
            "Note: limit: applies.\nmode: not a parameter.",
            {},
            "",
            id="only the tool's parameter names",
        ),
    ],
)
def test_docstring_shapes_authors_use(text, prose, params, returns):
    parsed = docstrings.parse(text, params=["query", "limit", "pump_id", "rate"])
    assert (parsed.prose, parsed.params, parsed.returns) == (prose, params, returns)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See Returns: below", "See Returns : below"),
        ("pick one (choices: a, b)", "pick one (choices : a, b)"),
        ("plain text", "plain text"),
    ],
)
def test_prose_is_made_safe_for_get_json_schema(text, expected):
    assert docstrings.safe(text) == expected


def test_an_args_entry_the_schema_lacks_stays_in_the_description():
    description = "Search.\n\nArgs:\n    query: What to find.\n    page_size: Results per page (read from the session)."
    planned = only_tool({"type": "object", "properties": {"query": {"type": "string"}}}, description=description)
    prose = tool_docstring(planned).split("Args:")[0]
    assert "Also documented, though not a parameter in the tool's schema:\n" in prose
    assert "        page_size: Results per page (read from the session).\n" in prose
    assert "query: What to find." in tool_docstring(planned).split("Args:")[1]
    no_params = only_tool(None, description="Reset the board.\n\nArgs:\n    seed: Fixed by the server.")
    assert "seed: Fixed by the server." in tool_docstring(no_params)


def test_no_filler_for_a_parameter_without_words():
    planned = only_tool({"type": "object", "properties": {"file_path": {"type": "string"}}}, description="")
    assert "file_path: File path." in tool_docstring(planned)
    assert "argument" not in tool_docstring(planned) and "Optional." not in tool_docstring(planned)
    assert tool_docstring(planned).startswith('"""Act.')


def test_identical_shapes_become_one_model():
    address = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    params = {"type": "object", "properties": {"home": address, "work": {**address, "description": "Office."}}}
    defs = plan(snapshot(tool(params, name="move"))).models_schema["$defs"]
    assert sorted(defs) == ["MoveParams", "MoveParamsHome"]
    assert defs["MoveParams"]["properties"]["work"] == {"$ref": "#/$defs/MoveParamsHome", "description": "Office."}


def test_the_task_schema_makes_columns_and_no_model():
    """Nothing reads a model of the task spec (rows carry its fields as columns): none is generated."""
    task = {"type": "object", "properties": {"home": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    planned = plan(snapshot(task_schema=task))
    assert planned.models_schema == {"$defs": {}}
    assert [column.name for column in planned.columns] == ["'home'"]


def test_definition_names_of_two_tools_cannot_collide():
    """Tool `a_b` with def `C` and tool `a` with def `BC` would both be `ABC...`: numbered."""
    one = tool(
        {"$defs": {"C": {"type": "integer"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/C"}}}, name="a_b"
    )
    two = tool(
        {"$defs": {"BC": {"type": "string"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/BC"}}}, name="a"
    )
    defs = plan(snapshot(one, two)).models_schema["$defs"]
    int_def = defs["ABParams"]["properties"]["x"]["$ref"].rsplit("/", 1)[1]
    str_def = defs["AParams"]["properties"]["x"]["$ref"].rsplit("/", 1)[1]
    assert int_def != str_def
    assert defs[int_def]["type"] == "integer" and defs[str_def]["type"] == "string"


def test_recursive_shapes_end():
    """A list of itself (`L = list[L | None]`), as pydantic writes recursive models: the prose and
    the dataset columns stop instead of recursing forever."""
    from orlgen.render.jobs import render_module

    recursive = {
        "$defs": {"L": {"type": "array", "items": {"anyOf": [{"$ref": "#/$defs/L"}, {"type": "null"}]}}},
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/L"}},
    }
    task = {"type": "object", "properties": {"kid": {"$ref": "#"}, "n": {"type": "integer"}}}
    source = render_module(snapshot(tool(recursive), task_schema=task))
    compile(source, "demo.py", "exec")
    assert "Column(name='kid', field='kid', as_json=True)".replace("'", '"') in source


def test_a_lone_surrogate_in_a_description_renders():
    source_plan = plan(snapshot(tool({"type": "object", "properties": {"a": {"type": "string"}}}, "Odd \ud800 text.")))
    assert "\\ud800" in tool_docstring(source_plan.tools[0])


def test_nested_fields_carry_their_words_and_limits_once():
    address = {
        "type": "object",
        "description": "A postal address.",
        "properties": {
            "street": {"type": "string", "description": "House and street.", "minLength": 1},
            "city": {"type": "string", "minLength": 1},
            "zip": {"type": "string", "description": "Postal code", "pattern": "^[0-9]{5}$"},
            "lines": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["street", "city", "zip"],
    }
    schema = {
        "type": "object",
        "$defs": {"Address": address},
        "properties": {
            "route": {
                "type": "object",
                "properties": {"start": {"$ref": "#/$defs/Address"}, "end": {"$ref": "#/$defs/Address"}},
            }
        },
    }
    doc = tool_docstring(only_tool(schema))
    assert (
        "{start?: {street: string (House and street. At least 1 character), city: string (at least 1 character), "
        "zip: string (Postal code; matching `^[0-9]{5}$`), lines?: [string] = []} (A postal address.), "
        "end?: {street: string, city: string, zip: string, lines?: [string] = []}}"
    ) in doc  # the second Address shows its shape only: each field's words once
    assert doc.count("House and street.") == 1


def test_each_parameter_documents_its_words_and_its_own_limits():
    """A parameter's line holds its words and the limits of its own type; limits of a union's
    branches are shown too."""
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10, "description": "How many."},
            "either": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]},
        },
        "required": ["count"],
    }
    count, either = only_tool(schema).params
    assert count.doc == "How many. Constraints: >= 1, < 10."
    assert "Constraints: >= 0." in either.doc
