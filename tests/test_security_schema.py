"""Hostile schemas (issue 10, items 1 and 2), played for real.

The attacker controls a tool's or the task's JSON Schema, through a hostile server or a PR that
edits a checked-in snapshot. Snapshots here are sealed exactly as orlgen seals them
(`Snapshot(...).to_json()`), then `orlgen generate` runs in-process through its CLI. What a user
needs, whatever the schema:

- generate ends with exit 0 and a module that imports, shows every tool to TRL and runs no code the
  schema chose; or with exit 2, one line on stderr (naming the tool when one tool is at fault), and
  nothing written;
- the module names no module the schema chose, holds no content of a local file, and sends what
  the caller passed (a password is not masked, a decimal goes as a number, `from` and `from_` each
  under its own name) to a real server.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from orlgen import lookalike, names
from orlgen.runtime.data import tasks_file
from orlgen.runtime.trl.tools import tool_methods
from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Task, Tool, tasks_path
from transformers.utils import get_json_schema

from tests.support.cli import invoke
from tests.support.modules import load_module

SECRET_TEXT = "SECRET-FILE-CONTENT-7f3a"
TASK_SCHEMA = {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}


def sealed(
    tools: list[Tool], task_schema: dict | None = None, target: str = "http://127.0.0.1:9", env: str = "attacked"
) -> str:
    """A snapshot's interface file text, sealed the way `orlgen snapshot` seals it (its one
    task is in `TASKS_FILE`, written beside it by `write_sealed`)."""
    return Snapshot(
        name="attacked",
        target=Target(kind="url", value=target, env=env),
        splits=[Split(name="train", num_tasks=1)],
        tools=tools,
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="all", tasks=[Task(index=0, spec={"prompt": "record"})])},
        task_schema=TASK_SCHEMA if task_schema is None else task_schema,
    ).to_json()


def tool(name: str, schema: dict | None, description: str = "A tool.") -> Tool:
    return Tool(name=name, description=description, input_schema=schema, shared=True)


def params(**properties: Any) -> dict:
    return {"type": "object", "properties": properties}


@dataclass
class Outcome:
    exit_code: int
    stderr: str
    module_path: Path | None  # the generated module, when generate wrote one
    traceback: BaseException | None  # an exception that escaped the CLI


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """An empty project directory, the working directory of `orlgen generate`."""
    (tmp_path / "generated").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


TASKS_FILE = tasks_file.encode([("train", 0, {"prompt": "record"})])


def write_sealed(path: Path, snapshot_text: str) -> None:
    path.write_text(snapshot_text, encoding="utf-8")
    tasks_path(path).write_text(TASKS_FILE, encoding="utf-8")


def generate(workdir: Path, snapshot_text: str) -> Outcome:
    snapshot = workdir / "generated" / "attacked.snapshot.json"
    write_sealed(snapshot, snapshot_text)
    result = invoke("generate", str(snapshot))
    escaped = result.exception if not isinstance(result.exception, (SystemExit, type(None))) else None
    modules = sorted((workdir / "generated").glob("*.py"))
    return Outcome(result.exit_code, result.stderr, modules[0] if modules else None, escaped)


def assert_sound(outcome: Outcome, tool_names: list[str]) -> Any:
    """Exit 0 with a working module (returned), or exit 2 with one line and nothing written."""
    assert outcome.traceback is None, f"traceback: {outcome.traceback!r}"
    assert outcome.exit_code in (0, 2), outcome.stderr
    if outcome.exit_code == 2:
        assert len(outcome.stderr.strip().splitlines()) == 1, outcome.stderr
        assert outcome.module_path is None, "a module was written although generate failed"
        return None
    assert outcome.module_path is not None
    module = load_module(outcome.module_path)
    assert sorted(module.TOOLS) == sorted(tool_names)
    for fn in methods(module).values():
        get_json_schema(fn)
    return module


def methods(module: Any) -> dict[str, Any]:
    from orlgen.runtime.trl.adapter import EnvAdapter

    (cls,) = {
        v for v in vars(module).values() if inspect.isclass(v) and issubclass(v, EnvAdapter) and v is not EnvAdapter
    }
    return {fn.__name__: fn for fn in tool_methods(cls)}


# ── code the schema chose never runs ──────────────────────────────────────────


def _extension_schemas(module: str) -> dict[str, dict]:
    """Every datamodel-code-generator key that names Python code, naming `module`'s `Thing` (a
    type) or `Base` (a model base class)."""
    thing, base = f"{module}.Thing", f"{module}.Base"
    return {
        "customTypePath": params(a={"type": "string", "customTypePath": thing}),
        "customBasePath": {**params(a={"type": "string"}), "customBasePath": base},
        "customBasePath-nested": params(a={**params(b={"type": "string"}), "customBasePath": base}),
        "x-python-type": params(a={"type": "string", "x-python-type": thing}),
        "x-python-import": {
            **params(a={"$ref": "#/$defs/Thing"}),
            "$defs": {"Thing": {"type": "object", "x-python-import": {"module": module, "name": "Thing"}}},
        },
        "x-is-base-class": {
            **params(a={"$ref": "#/$defs/Thing"}),
            "$defs": {"Thing": {**params(b={"type": "string"}), "x-is-base-class": True, "customBasePath": base}},
        },
    }


@pytest.fixture
def canary(tmp_path, monkeypatch) -> tuple[str, Path]:
    """A module on the trainer's path that writes a file when imported: (module name, that file)."""
    site = tmp_path / "site"
    site.mkdir()
    name = f"orlgen_canary_{abs(hash(str(tmp_path))) % 10**8}"
    written = tmp_path / "canary-was-imported"
    (site / f"{name}.py").write_text(
        f"open({str(written)!r}, 'w').close()\nThing = str\n"
        "from pydantic import BaseModel\nclass Base(BaseModel): pass\n"
    )
    monkeypatch.syspath_prepend(str(site))
    return name, written


@pytest.mark.slow
@pytest.mark.parametrize("where", ["tool", "task"])
def test_generator_extensions_import_nothing(workdir, canary, where):
    name, written = canary
    failures = []
    for key, schema in _extension_schemas(name).items():
        if where == "tool":
            text = sealed([tool("t", schema)])
        else:  # the same keys in the task schema, next to the task's real field
            text = sealed(
                [tool("t", None)],
                task_schema={**schema, "properties": {"prompt": {"type": "string"}, **schema["properties"]}},
            )
        outcome = generate(workdir, text)
        module = assert_sound(outcome, ["t"])
        source = outcome.module_path.read_text() if outcome.module_path else ""
        if written.exists() or name in source:
            failures.append(key)
        written.unlink(missing_ok=True)
        sys.modules.pop(name, None)
        if outcome.module_path:
            outcome.module_path.unlink()
        del module
    assert failures == []


@pytest.fixture(scope="module")
def server_capture(tmp_path_factory) -> tuple[Any, Path]:
    """`orlgen snapshot` of a real hostile server whose schema carries dcg's extensions."""
    out = tmp_path_factory.mktemp("server-capture")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(out)
        result = invoke("snapshot", "tests.support.envs.schemas:Extensions", "--out", "generated")
    return result, out / "generated"


def test_snapshot_keeps_what_the_server_said(server_capture):
    """Sanitising is part of rendering: the snapshot records the hostile keys, so `diff` sees them."""
    from tests.support.envs.schemas import SERVER_CANARY

    _, out = server_capture
    (snapshot,) = out.glob("*.snapshot.json")
    text = snapshot.read_text()
    assert "customTypePath" in text and "customBasePath" in text and SERVER_CANARY in text


def test_hostile_server_extensions_import_nothing(server_capture, tmp_path, monkeypatch):
    """The attack through the front door: the module generated from the hostile server's capture."""
    from tests.support.envs.schemas import SERVER_CANARY

    result, out = server_capture
    assert result.exit_code in (0, 2), result.output
    site = tmp_path / "site"
    site.mkdir()
    written = tmp_path / "server-canary-was-imported"
    (site / f"{SERVER_CANARY}.py").write_text(
        f"open({str(written)!r}, 'w').close()\nThing = str\n"
        "from pydantic import BaseModel\nclass Base(BaseModel): pass\n"
    )
    monkeypatch.syspath_prepend(str(site))
    try:
        for path in out.glob("*.py"):
            assert SERVER_CANARY not in path.read_text()
            load_module(path)
    finally:
        sys.modules.pop(SERVER_CANARY, None)
    assert not written.exists()


def test_each_dropped_keyword_is_reported_once(workdir):
    schema = {
        **params(a={"type": "string", "customTypePath": "m.T"}, b={"type": "integer", "x-python-type": "m.T"}),
        "customBasePath": "m.B",
    }
    outcome = generate(workdir, sealed([tool("attack_tool", schema)]))
    assert outcome.exit_code in (0, 2), outcome.stderr
    if outcome.exit_code == 0:
        lines = outcome.stderr.splitlines()
        for key in ("customTypePath", "x-python-type", "customBasePath"):
            said = [line for line in lines if key in line]
            assert len(said) == 1 and "attack_tool" in said[0], (key, outcome.stderr)


def test_generate_imports_nothing_from_the_working_directory(workdir):
    """Verifying a module before writing it must not run files of the project being generated
    into: a `pydantic.py` in the working directory is never imported (issue 10 item 2)."""
    written = workdir / "shadow-was-imported"
    (workdir / "pydantic.py").write_text(f"open({str(written)!r}, 'w').close()\n")
    outcome = generate(workdir, sealed([tool("t", params(a={"type": "string"}))]))
    assert outcome.exit_code == 0, outcome.stderr
    assert not written.exists()


# ── no local file reaches the module ─────────────────────────────────────────


def _leaks(secret: Path) -> dict[str, tuple[list[Tool], dict | None]]:
    """Ways a schema can name a local file, in a tool schema or in the task schema."""
    relative, uri = f"{secret.name}#/$defs/Leak", f"{secret.as_uri()}#/$defs/Leak"
    absolute = f"{secret}#/$defs/Leak"
    leaks: dict[str, tuple[list[Tool], dict | None]] = {}
    for keyword in ("$ref", "$dynamicRef", "$recursiveRef"):
        for label, ref in (
            ("relative", relative),
            ("./relative", f"./{relative}"),
            ("absolute", absolute),
            ("file uri", uri),
        ):
            leaks[f"tool {keyword} {label}"] = ([tool("t", params(a={keyword: ref}))], None)
            leaks[f"task {keyword} {label}"] = (
                [tool("t", None)],
                {**TASK_SCHEMA, "properties": {"prompt": {"type": "string"}, "x": {keyword: ref}}},
            )
    leaks["tool $id + local $ref"] = ([tool("t", {**params(a={"$ref": "#/$defs/Leak"}), "$id": secret.as_uri()})], None)
    leaks["task root $ref"] = ([tool("t", None)], {"$ref": uri})
    return leaks


@pytest.mark.slow
def test_no_local_file_content_reaches_the_module(workdir):
    secret = workdir / "secret.json"
    leak = {
        "type": "object",
        "description": SECRET_TEXT,
        "properties": {SECRET_TEXT.replace("-", "_"): {"type": "string"}},
    }
    secret.write_text(json.dumps({**leak, "$defs": {"Leak": leak}}))
    leaked = []
    for label, (tools, task_schema) in _leaks(secret).items():
        outcome = generate(workdir, sealed(tools, task_schema))
        assert_sound(outcome, ["t"])
        written = b"".join(p.read_bytes() for p in (workdir / "generated").glob("*.py"))
        if SECRET_TEXT.encode() in written or SECRET_TEXT.replace("-", "_").encode() in written:
            leaked.append(label)
        for path in (workdir / "generated").glob("*.py"):
            path.unlink()
    assert leaked == []


# ── formats and impossible constraints ───────────────────────────────────────


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["email", "idn-email", "ulid"])
def test_formats_need_no_extra_package(workdir, fmt):
    outcome = generate(workdir, sealed([tool("t", params(a={"type": "string", "format": fmt}))]))
    assert outcome.exit_code == 0, outcome.stderr  # a format is a hint to the model, never a reason to fail
    assert_sound(outcome, ["t"])


def _nest(kind: str, depth: int) -> dict:
    node: dict = {"type": "string"}
    for _ in range(depth):
        node = {
            "array": {"type": "array", "items": node},
            "object": params(x=node),
            "anyOf": {"anyOf": [node, {"type": "null"}]},
        }[kind]
    return node


HOSTILE_SCHEMAS: dict[str, dict] = {
    "negative minLength": params(a={"type": "string", "minLength": -1}),
    "huge maxItems": params(a={"type": "array", "items": {"type": "string"}, "maxItems": 10**30}),
    "huge minLength": params(a={"type": "string", "minLength": 10**20}),
    "minimum above maximum": params(a={"type": "integer", "minimum": 5, "maximum": 1}),
    "root $ref to itself": {"$ref": "#", **params(a={"type": "string"})},
    "property $ref to the root": params(a={"$ref": "#"}),
    "unresolvable local $ref": params(a={"$ref": "#/$defs/Missing"}),
    "huge int default": params(a={"type": "integer", "default": 10**400}),
    "huge int enum": params(a={"enum": [10**400, 1]}),
    "lone surrogate in a description": params(a={"type": "string", "description": "x\ud800y"}),
    "lone surrogate in an enum": params(a={"enum": ["\udfff", "ok"]}),
    "lone surrogate in a property name": params(**{"a\ud800": {"type": "string"}}),
    "70 levels of arrays": params(a=_nest("array", 70)),  # past the generator's bound of 64 levels
    "70 levels of objects": params(a=_nest("object", 70)),
    "70 levels of anyOf": params(a=_nest("anyOf", 50)),
}


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_number_cannot_be_recorded(value):
    """JSON has no NaN: a snapshot refuses it (pydantic would write null in its place)."""
    with pytest.raises(ValueError, match="non-finite"):
        sealed([tool("attack_tool", params(a={"enum": [1.5, value]}))])
    with pytest.raises(ValueError, match="non-finite"):
        sealed([tool("attack_tool", params(a={"type": "number", "maximum": value}))])


@pytest.mark.parametrize("kind", ["array", "object", "anyOf"])
def test_a_300_level_schema_is_refused_in_one_line(workdir, kind):
    """Too deep to seal as a snapshot (capture refuses it the same way), so the attacker writes
    the file by hand: generate answers with one line, whatever the recorded hash."""
    text = sealed([tool("attack_tool", params(a={"type": "string"}))])
    data = json.loads(text)
    data["tools"][0]["input_schema"] = params(a=_nest(kind, 300))
    with pytest.raises(ValueError, match="nested deeper than"):
        Snapshot.model_validate(data)
    outcome = generate(workdir, json.dumps(data))
    assert_sound(outcome, ["attack_tool"])
    assert outcome.exit_code == 2 and "nested deeper than" in outcome.stderr


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(HOSTILE_SCHEMAS))
def test_hostile_schema_gives_a_working_module_or_one_line(workdir, label):
    outcome = generate(workdir, sealed([tool("attack_tool", HOSTILE_SCHEMAS[label])]))
    assert_sound(outcome, ["attack_tool"])
    if outcome.exit_code == 2:
        assert "attack_tool" in outcome.stderr, outcome.stderr  # the one line names the tool at fault


def test_deep_task_schema_gives_a_working_module_or_one_line(workdir):
    outcome = generate(
        workdir,
        sealed(
            [tool("t", None)],
            task_schema={**TASK_SCHEMA, "properties": {"prompt": {"type": "string"}, "deep": _nest("object", 70)}},
        ),
    )
    assert_sound(outcome, ["t"])
    text = sealed([tool("t", None)])
    data = json.loads(text)
    data["task_schema"]["properties"]["deep"] = _nest("object", 300)
    outcome = generate(workdir, json.dumps(data))
    assert_sound(outcome, ["t"])
    assert outcome.exit_code == 2 and "nested deeper than" in outcome.stderr


@pytest.mark.slow
def test_a_failed_generate_keeps_the_previous_module(workdir):
    good = generate(workdir, sealed([tool("t", params(a={"type": "string"}))]))
    assert good.exit_code == 0 and good.module_path is not None
    before = good.module_path.read_bytes()
    bad = generate(workdir, sealed([tool("t", params(a={"$ref": "#/$defs/Missing"}))]))
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert good.module_path.read_bytes() == before


# ── values reach a real server as the caller passed them ─────────────────────


@pytest.fixture(scope="module")
def recorder_url():
    from orlgen.serve import ServerProcess

    with ServerProcess("tests.support.envs.schemas:RawRecorder") as server:
        yield server.url


def _episode(workdir: Path, url: str, tools: list[Tool]) -> tuple[Any, dict[str, Any]]:
    outcome = generate(workdir, sealed(tools, target=url, env="rawrecorder"))
    module = assert_sound(outcome, [t.name for t in tools])
    assert module is not None, outcome.stderr
    found = methods(module)
    env = module.environment_factory(base_url=url, on_drift="ignore")  # the snapshot is forged: no drift check
    env.reset(**module.build_dataset(num_tasks=1)[0])
    return env, found


def _sent(output: str) -> Any:
    assert not output.startswith("Error"), output
    return json.loads(output)


@pytest.mark.slow
def test_password_reaches_the_server_unmasked(workdir, recorder_url):
    env, found = _episode(
        workdir,
        recorder_url,
        [
            tool(
                "record",
                {**params(token={"type": "string", "format": "password", "writeOnly": True}), "required": ["token"]},
            )
        ],
    )
    assert _sent(found["record"](env, token="hunter2")) == {"token": "hunter2"}


def test_decimal_is_sent_as_a_number(workdir, recorder_url):
    env, found = _episode(
        workdir,
        recorder_url,
        [tool("record", {**params(amount={"type": "number", "format": "decimal"}), "required": ["amount"]})],
    )
    assert _sent(found["record"](env, amount=12.5)) == {"amount": 12.5}


def test_colliding_defs_names_each_validate_against_their_own(workdir, recorder_url):
    def with_item(item: dict) -> dict:
        return {**params(item={"$ref": "#/$defs/Item"}), "required": ["item"], "$defs": {"Item": item}}

    env, found = _episode(
        workdir,
        recorder_url,
        [
            tool("record", with_item({**params(x={"type": "integer"}), "required": ["x"]})),
            tool("record_too", with_item({**params(y={"type": "string"}), "required": ["y"]})),
        ],
    )
    assert _sent(found["record"](env, item={"x": 1})) == {"item": {"x": 1}}
    assert _sent(found["record_too"](env, item={"y": "b"})) == {"item": {"y": "b"}}


def test_from_and_from_underscore_each_sent_under_its_own_name(workdir, recorder_url):
    env, found = _episode(
        workdir,
        recorder_url,
        [
            tool(
                "record",
                {**params(**{"from": {"type": "string"}, "from_": {"type": "string"}}), "required": ["from", "from_"]},
            )
        ],
    )
    assert _sent(found["record"](env, **{"from": "a", "from_": "b"})) == {"from": "a", "from_": "b"}


# --------------------------------------------------------------------------------------------
# issue 17, items 4 and 7: text that displays as other text, and names munged in linear time
# --------------------------------------------------------------------------------------------

LOOK_ALIKES = {"path": {"type": "string"}, "раth": {"type": "string"}, "path\u115f": {"type": "string"}}
INVISIBLE = "bidi \u202eevil\u202c, zero\u200bwidth, line\u2028separator, filler\u115f, bom\ufeff"


def test_look_alike_parameters_are_renamed_reported_and_sent_under_their_own_names(workdir, recorder_url):
    """`path`, Cyrillic `раth` and `path` + U+115F once rendered as three look-alike names."""
    env, found = _episode(
        workdir, recorder_url, [tool("record", {**params(**LOOK_ALIKES), "required": list(LOOK_ALIKES)})]
    )
    names_shown = list(inspect.signature(found["record"]).parameters)[1:]
    assert names_shown == ["path", "th", "path_"]
    sent = _sent(found["record"](env, path="a", th="b", path_="c"))
    assert sent == {"path": "a", "раth": "b", "path\u115f": "c"}


def test_each_look_alike_rename_is_reported(workdir):
    outcome = generate(workdir, sealed([tool("record", params(**LOOK_ALIKES))]))
    assert outcome.exit_code == 0, outcome.stderr
    warnings = [line for line in outcome.stderr.splitlines() if line.startswith("orlgen: warning: tool 'record'")]
    assert len(warnings) == 2, outcome.stderr
    assert "'раth' mixes scripts" in outcome.stderr and "'path\\u115f' holds an invisible character" in outcome.stderr


@pytest.mark.slow
def test_look_alike_fields_of_one_model_get_distinct_names(workdir):
    outcome = generate(workdir, sealed([tool("record", params(where={"type": "object", "properties": LOOK_ALIKES}))]))
    assert_sound(outcome, ["record"])
    tree = ast.parse(outcome.module_path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields = [item.target.id for item in node.body if isinstance(item, ast.AnnAssign)]
            assert len({lookalike.skeleton(name) for name in fields}) == len(fields), (node.name, fields)


@pytest.mark.slow
def test_no_invisible_character_anywhere_in_a_module(workdir):
    """Descriptions of nested models become pydantic class docstrings (by datamodel-code-generator),
    once with bidi controls, zero-width characters and line separators raw."""
    nested = {
        "type": "object",
        "description": f"Nested {INVISIBLE}",
        "properties": {"inner": {"type": "object", "description": f"Inner {INVISIBLE}", "properties": {"x": {}}}},
    }
    schema = params(outer=nested, choice={"enum": ["a\u200bb", "c"]})
    outcome = generate(workdir, sealed([tool("record", schema, description=f"Records. {INVISIBLE}")]))
    module = assert_sound(outcome, ["record"])
    text = outcome.module_path.read_text(encoding="utf-8")
    shown = [f"U+{ord(char):04X}" for char in text if char != "\n" and lookalike.invisible(char)]
    assert shown == [], shown
    docs = [
        obj.__doc__ or ""
        for obj in vars(module).values()
        if isinstance(obj, type) and obj.__module__ == module.__name__
    ]
    assert any("Nested bidi \u202eevil" in doc for doc in docs)  # the text itself is kept, escaped in the source


def _diff_output(tmp_path: Path, style: str) -> str:
    old = tmp_path / "old.snapshot.json"
    new = tmp_path / "new.snapshot.json"
    write_sealed(old, sealed([tool("record", params(a={"type": "string"}))]))
    write_sealed(new, sealed([tool("record", params(a={"type": "integer"}, **{"b\u202ec\u115f": {"type": "string"}}))]))
    return invoke("diff", str(old), "--against", str(new), "--format", style).stdout


@pytest.mark.parametrize("style", ["text", "github"])
def test_diff_output_shows_invisible_characters_as_escapes(tmp_path, style):
    output = _diff_output(tmp_path, style)
    assert "b\\u202ec\\u115f" in output
    assert not [char for char in output if char != "\n" and lookalike.invisible(char)], output


@pytest.mark.slow
def test_name_munging_is_linear_on_megabyte_inputs(monkeypatch):
    """20 000 wire names that all want `unnamed` once took a quadratic search for a free number:
    the candidates tried are counted (a quadratic search tries about n²/2 = 2·10⁸). One name of a
    megabyte is munged in one pass: timed against half its size in this process, alternately, best
    of three each (linear doubles the time, quadratic quadruples it), never against the clock."""
    tried = 0
    numbered = names._numbered

    def counting(key, spell, usable, taken):
        def counted(name):
            nonlocal tried
            tried += 1
            return usable(name)

        return numbered(key, spell, counted, taken)

    monkeypatch.setattr(names, "_numbered", counting)
    wires = ["".join(chars) for chars in itertools.product("!#$%&()*+,", repeat=5)][:20_000]
    assert len(set(names.param_names(wires))) == len(wires)
    taken = names.Taken()
    for _ in range(20_000):
        taken.add(names.class_name("!", taken=taken))
    assert tried <= 3 * 40_000

    def munge(repeats: int) -> float:
        one = "aB1-é" * repeats
        start = time.perf_counter()
        names.identifier(one), names.class_name(one), names.param_names([one, one.upper()])
        return time.perf_counter() - start

    half, whole = [], []
    for _ in range(3):
        half.append(munge(100_000))
        whole.append(munge(200_000))
    assert min(whole) < 3 * min(half), (half, whole)
