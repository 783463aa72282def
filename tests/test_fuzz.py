"""Property-based tests: hostile tool specs still give a module that compiles, imports with no
side effect, shows every tool to TRL, and renders through TRL's Qwen3 chat template; schemas with
any keyword of the JSON Schema vocabulary or datamodel-code-generator's extensions give such a
module or a one-line orlgen error.

CI runs `ORLGEN_FUZZ_EXAMPLES` examples (default 40) from a fixed seed, so `make test` draws the
same inputs every run; `make fuzz` runs many more from a random seed `ORLGEN_FUZZ_SEED`, which it
prints (set it to replay a run).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import itertools
import json
import keyword
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import trl
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st
from orlgen.errors import OrlgenError
from orlgen.plan.planner import tool_names
from orlgen.render.jobs import render_module
from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Task, Tool
from transformers.utils import get_json_schema
from transformers.utils.chat_template_utils import render_jinja_template

EXAMPLES = int(os.environ.get("ORLGEN_FUZZ_EXAMPLES", "40"))
SEED = int(os.environ.get("ORLGEN_FUZZ_SEED", "0"))
# No example database either: a failure saved by an earlier run would change what this one draws.
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
QWEN3 = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
_modules = itertools.count()

HOSTILE_TEXT = [
    '"""',
    "'''",
    "\\",
    "Args:",
    "Returns:",
    "Raises:",
    "(choices: x)",
    "{{ x }}",
    "{% if %}",
    "\x00",
    "\n",
    "\t",
    "\u2028",
    "word:",
    "é",
    "ﬁ",
    "__import__('os')",
    "#",
    "self",
    "%s",
]
names = st.one_of(
    st.sampled_from(
        keyword.kwlist
        + keyword.softkwlist
        + [
            "reset",
            "get_reward",
            "reward",
            "self",
            "_x",
            "__init__",
            "tool_calls",
            "outcome",
            "a-b",
            "1st",
            "ﬁle",
            "",
            "Any",
            "Literal",
            "UNSET",
            "None",
            "tool_method",  # names the module binds for itself (orlgen.plan.reserved.TRL_MODULE_NAMES)
            "spec",
            "build_dataset",
            "Field",
        ]
    ),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
)
prose = st.lists(st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=8)), max_size=6).map("".join)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))


def schemas(depth: int = 2) -> st.SearchStrategy:
    leaf = st.one_of(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["string", "integer", "number", "boolean", "null"])},
            optional={
                "description": prose,
                "default": scalars,
                "minimum": st.integers(0, 3),
                "maxLength": st.integers(1, 9),
                "pattern": prose,
                "format": prose,
            },
        ),
        st.fixed_dictionaries({"enum": st.lists(scalars, min_size=1, max_size=4, unique_by=repr)}),
        st.fixed_dictionaries({"const": scalars}),
        st.just({}),
    )
    if depth == 0:
        return leaf
    inner = schemas(depth - 1)
    return st.one_of(
        leaf,
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)}),
        st.fixed_dictionaries(
            {"type": st.just("array"), "prefixItems": st.lists(inner, min_size=2, max_size=3), "maxItems": st.just(2)}
        ),
        objects(inner),
    )


def objects(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.dictionaries(names, inner, max_size=4).flatmap(
        lambda props: st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.just(props),
                "required": st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([]),
            }
        )
    )


tools = st.lists(
    st.builds(
        lambda name, description, schema, shared: Tool(
            name=name, description=description, input_schema=schema or None, shared=shared
        ),
        names,
        prose,
        st.one_of(st.none(), objects(schemas(2))),
        st.booleans(),
    ),
    max_size=5,
    unique_by=lambda tool: tool.name,
)


def snapshot_of(tool_list: list[Tool]) -> Snapshot:
    return Snapshot(
        name="fuzzed",
        target=Target(kind="url", value="http://127.0.0.1:9", env="fuzzed"),
        splits=[Split(name="train", num_tasks=1)],
        tools=tool_list,
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="all", tasks=[Task(index=0, spec={"prompt": "x", "n": 1})])},
        task_schema={"type": "object", "properties": {"prompt": {"type": "string"}, "n": {"type": "integer"}}},
    ).canonical()


def import_source(source: str, directory: Path):
    path = directory / f"fuzzed_{next(_modules)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@seed(SEED)
@FUZZ
@given(tool_list=tools)
def test_hostile_specs_give_a_working_module(tool_list, tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    source = render_module(snapshot_of(tool_list))
    compile(source, "fuzzed.py", "exec")
    before = set(Path.cwd().iterdir())
    module = import_source(source, directory)
    assert set(Path.cwd().iterdir()) == before  # importing wrote nothing
    assert sorted(module.TOOLS) == sorted(tool.name for tool in tool_list)
    env_class = module.FuzzedEnv
    methods = {
        fn.__name__: fn
        for name, fn in vars(env_class).items()
        if callable(fn) and not name.startswith("_") and name != "reset"
    }
    # Every tool, under its wire name, unless the model could misread that name (`tool_names`
    # decides it once, for the planner and the verifier); a plain short ASCII name is always kept.
    shown = {wire: name for wire, (_, name) in tool_names(snapshot_of(tool_list)).items()}
    assert sorted(methods) == sorted(shown.values())
    twins = _case_twins(shown)
    for wire, name in shown.items():
        if wire.isascii() and wire.isidentifier() and len(wire) <= 64 and wire.lower() not in twins:
            assert name == wire, (wire, name)
        else:
            assert name == wire or (name.isascii() and name.isidentifier()), (wire, name)
    schemas_seen = [get_json_schema(fn) for fn in methods.values()]
    for schema, tool in zip(schemas_seen, methods, strict=False):
        assert schema["function"]["name"] == tool
    rendered, _ = render_jinja_template(
        conversations=[[{"role": "user", "content": "hi"}]],
        tools=schemas_seen,
        chat_template=QWEN3,
    )
    text = rendered[0]
    for name in methods:
        assert json.dumps(name, ensure_ascii=False) in text


def _case_twins(shown: dict[str, str]) -> set[str]:
    """Wire names that differ only in case from another tool's (shown apart, as look-alikes)."""
    folded = [wire.lower() for wire in shown]
    return {name for name in folded if folded.count(name) > 1}


# ── the full JSON Schema vocabulary plus the generator's extensions (issue 10) ─────────────

CANARY_MODULE = "orlgen_fuzz_canary"
# JSON Schema 2020-12 (core, applicator, validation, meta-data, format, content), drafts 4-2019
# leftovers and OpenAPI's, then every key datamodel-code-generator 0.89 reads (grep of its source).
VOCABULARY = [
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "dependencies",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "additionalItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "discriminator",
    "nullable",
]
GENERATOR_EXTENSIONS = [
    "customTypePath",
    "customBasePath",
    "x-python-type",
    "x-python-import",
    "x-is-base-class",
    "x-is-classvar",
    "x-enum-varnames",
    "x-enumNames",
    "x-enum-descriptions",
    "x-enum-field-as-literal",
    "x-propertyNames",
    "x-python-unserializable",
    "x-python-union-branch",
    "x-datamodel-code-generator-read-as-const",
    "x-datamodel-code-generator-field-name",
    "x-avro-logicalType",
    "x-avro-scale",
    "x-avro-precision",
    "x-xsd-totalDigits",
    "x-xsd-fractionDigits",
]
FORMATS = [
    "email",
    "idn-email",
    "ulid",
    "uuid",
    "password",
    "decimal",
    "date-time",
    "uri",
    "ipv4",
    "binary",
    "byte",
    "int64",
    "path",
    "hostname",
    "date",
    "time",
    "duration",
]
keyword_values = st.one_of(
    scalars,
    st.sampled_from(
        [
            f"{CANARY_MODULE}.Thing",
            {"module": CANARY_MODULE, "name": "Thing"},
            "#",
            "#/$defs/X",
            "secret.json#/$defs/Leak",
            "file:///etc/hostname",
            True,
            -1,
            10**30,
            1e300,
            *FORMATS,
        ]
    ),
    st.lists(scalars, max_size=3),
    st.dictionaries(st.sampled_from(["x", "X", "type", "a"]), scalars, max_size=2),
    schemas(0),
)


def with_keywords(schema: st.SearchStrategy) -> st.SearchStrategy:
    """`schema` with up to three extra keywords of the vocabulary, each with an arbitrary value."""
    extra = st.dictionaries(st.sampled_from(VOCABULARY + GENERATOR_EXTENSIONS), keyword_values, max_size=3)
    return st.tuples(schema, extra).map(lambda pair: {**pair[0], **pair[1]} if isinstance(pair[0], dict) else pair[0])


def keyword_objects() -> st.SearchStrategy:
    properties = st.dictionaries(names, with_keywords(schemas(1)), min_size=1, max_size=3)
    return with_keywords(properties.map(lambda props: {"type": "object", "properties": props}))


@functools.cache
def _canary() -> Path:
    """A module on the path that leaves a file when imported; returns that file."""
    directory = Path(tempfile.mkdtemp(prefix="orlgen-fuzz-canary-"))
    written = directory / "imported"
    (directory / f"{CANARY_MODULE}.py").write_text(f"open({str(written)!r}, 'w').close()\nThing = str\n")
    sys.path.append(str(directory))
    return written


CANARY_EXAMPLE = [
    Tool(
        name="t",
        description="d",
        shared=True,
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "string", "customTypePath": f"{CANARY_MODULE}.Thing"}},
        },
    )
]


@pytest.mark.slow
@seed(SEED)
@FUZZ
@example(tool_list=CANARY_EXAMPLE)
@given(
    tool_list=st.lists(
        st.builds(
            lambda name, schema: Tool(name=name, description="A tool.", input_schema=schema, shared=True),
            names,
            keyword_objects(),
        ),
        min_size=1,
        max_size=3,
        unique_by=lambda tool: tool.name,
    )
)
def test_any_keyword_gives_a_working_module_or_a_one_line_error(tool_list, tmp_path_factory):
    written = _canary()
    try:
        source = render_module(snapshot_of(tool_list))
    except OrlgenError as exc:  # orlgen's own errors: one line each
        assert "\n" not in str(exc).strip(), str(exc)
        return
    imported = {
        alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {node.module or "" for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
    assert not any(CANARY_MODULE in name for name in imported)  # as text (a pattern, say) it is harmless
    module = import_source(source, tmp_path_factory.mktemp("fuzz"))
    assert not written.exists(), "importing the module ran a module the schema named"
    assert sorted(module.TOOLS) == sorted(tool.name for tool in tool_list)
    for name, fn in vars(module.FuzzedEnv).items():
        if callable(fn) and not name.startswith("_") and name != "reset":
            get_json_schema(fn)


# Shapes that once failed a linter, checked on every run: names whose numbers ruff's RUF022 sorts
# naturally (`v2` before `v10`), a parameter named as the module's `UNSET`, a required model
# field of that name (no use of `UNSET`: ruff's F401 if it were imported), and a field named like
# a builtin a later field's annotation uses (`str` before `dict[str, Any]`: mypy's "not valid as
# a type"; seed 1597441081).
LINT_SHAPES = [
    [Tool(name=f"get_v{n}_rates", description="Rates.", input_schema=None, shared=True) for n in (10, 2, 1)],
    [
        Tool(
            name="lookup",
            description="Look up.",
            input_schema={"type": "object", "properties": {"UNSET": {"type": "string"}, "n": {"type": "integer"}}},
            shared=True,
        ),
        Tool(
            name="Rates10", description="Rates.", input_schema={"type": "object", "properties": {"x": {}}}, shared=True
        ),
        Tool(
            name="Rates9", description="Rates.", input_schema={"type": "object", "properties": {"x": {}}}, shared=True
        ),
    ],
    [
        Tool(
            name="lookup",
            description="Look up.",
            input_schema={"type": "object", "properties": {"UNSET": {"type": "string"}}, "required": ["UNSET"]},
            shared=True,
        )
    ],
    [
        Tool(
            name="reset",
            description="Reset.",
            input_schema={
                "type": "object",
                "properties": {"str": {"enum": [True]}, "int": {}, "meta": {"type": "object"}},
                "required": ["str", "int", "meta"],
            },
            shared=True,
        )
    ],
]


@pytest.mark.slow
def test_fuzzed_modules_pass_ruff_and_mypy(tmp_path):
    """Hostile specs still give modules a reviewer's linters accept: ruff's default rules plus
    import sorting, and mypy, over a batch of fuzzed modules (one run of each, for speed)."""
    drawn: list[list[Tool]] = []

    @seed(SEED)
    @settings(FUZZ, max_examples=8, phases=[Phase.generate])
    @given(tool_list=tools)
    def draw(tool_list):
        drawn.append(tool_list)

    draw()
    batch = [*LINT_SHAPES, *drawn]
    for i, tool_list in enumerate(batch):
        (tmp_path / f"fuzzed_{i}.py").write_text(render_module(snapshot_of(tool_list)))
    files = sorted(str(path) for path in tmp_path.glob("*.py"))
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--extend-select", "I", "--no-cache", *files]
    linted = subprocess.run(ruff, capture_output=True, text=True, cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout
    mypy = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--cache-dir",
        str(tmp_path / ".mypy"),
        "--follow-imports=silent",
        *files,
    ]
    typed = subprocess.run(mypy, capture_output=True, text=True, cwd=tmp_path)  # orlgen found as installed
    assert typed.returncode == 0, typed.stdout
