"""The plan's typed fields: what a trainer reads as data rather than parsing the rendered text back.

Beside each `Source` literal a template pastes, the plan holds the same thing as plain data (a
parameter's `annotation`, a tool's `shown_name`, the module's `name` and `system_text`, the TRL
docstring's text), and no trainer package turns Python text back into values. These tests hold
the two to agree over every checked-in snapshot, and the trainers to the rule.
"""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

import pytest
from orlgen.plan.hints import Hint
from orlgen.plan.planner import ModulePlan, plan
from orlgen.snapshot.model import load
from orlgen.trainers.trl.layout import tool_docstring

from tests.support.modules import REPO, load_module

SNAPSHOTS = sorted((REPO / "generated").glob("*.snapshot.json"))
# Calls that turn Python text into values or code: a trainer reading the plan needs none of them.
_PARSERS = {("ast", "literal_eval"), ("ast", "parse"), ("builtins", "eval"), ("builtins", "compile")}


def _planned(path: Path) -> ModulePlan:
    return plan(load(path))


def _parser_calls(path: Path) -> list[tuple[int, str]]:
    """(line, `module.name`) for each call in `path` to a parser of `_PARSERS`, however it was imported
    (`import ast as a`, `from ast import literal_eval as le`, or the builtin)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {"ast": "ast"}  # local name -> module
    functions = {"eval": ("builtins", "eval"), "compile": ("builtins", "compile")}  # local name -> (module, name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update({alias.asname or alias.name: alias.name for alias in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module:
            functions.update({alias.asname or alias.name: (node.module, alias.name) for alias in node.names})
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules:
            called = (modules[func.value.id], func.attr)
        elif isinstance(func, ast.Name) and func.id in functions:
            called = functions[func.id]
        if called in _PARSERS:
            found.append((node.lineno, ".".join(called)))
    return sorted(found)


def test_no_trainer_parses_python_text_back(tmp_path: Path):
    """A trainer reads the plan's typed fields; a literal or hint parsed back would be a second
    reader of what the plan already decided (and one that could drift from the writer). The scan
    first proves it finds each way of reaching a parser, so a blind scan cannot pass."""
    planted = tmp_path / "layout.py"
    planted.write_text(
        "import ast as a\nfrom ast import literal_eval as le\n"
        "a.parse('x')\nle('1')\neval('1')\nast.literal_eval('1')\nprint('fine')\n",
        encoding="utf-8",
    )
    assert [call for _, call in _parser_calls(planted)] == [
        "ast.parse",
        "ast.literal_eval",
        "builtins.eval",
        "ast.literal_eval",
    ]
    sources = sorted((REPO / "orlgen" / "trainers").rglob("*.py"))
    assert len(sources) >= 6  # the registry and every trainer's package
    found = [f"{path.relative_to(REPO)}:{line} {call}" for path in sources for line, call in _parser_calls(path)]
    assert not found, f"trainer code parses Python text: {found}"


def test_the_typed_annotation_agrees_with_the_rendered_hint():
    """Every parameter's `annotation` renders to its `hint` text, and is the type that text
    evaluates to in the checked-in TRL module's method (what `get_json_schema` reads there): every
    parameter of every checked-in env, literals, nested generics and unions among them."""
    from orlgen.trainers.skyrl.prompt import runtime_type

    compared = []
    for path in SNAPSHOTS:
        factory = load_module(path.with_name(path.name.replace(".snapshot.json", ".py"))).environment_factory
        for tool in _planned(path).tools:
            evaluated = typing.get_type_hints(getattr(factory, tool.method))
            for param in tool.params:
                assert str(param.annotation) == param.hint, (path.name, tool.method, param.name)
                assert runtime_type(param.annotation) == evaluated[param.name], (path.name, tool.method, param.hint)
                compared.append(param.hint)
    assert len(compared) == 62 and len(set(compared)) == 22


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda path: path.name)
def test_every_plain_field_agrees_with_its_literal(path: Path):
    """The module's name, its system message, each tool's shown name and docstring: the plain
    value is what the pasted literal reads as (the docstring as `inspect.getdoc` reads the method's)."""
    from orlgen.trainers.trl.layout import tool_docstring_text

    planned = _planned(path)
    assert ast.literal_eval(planned.snapshot_file) == f"{planned.name}.snapshot.json"
    if planned.system_prompt is None:
        assert planned.system_text is None
    else:
        assert ast.literal_eval(planned.system_prompt) == planned.system_text
    for tool in planned.tools:
        assert ast.literal_eval(tool.shown) == tool.shown_name
        read = inspect.cleandoc(ast.literal_eval(tool_docstring(tool)))
        assert read == inspect.cleandoc(tool_docstring_text(tool)), tool.method


@pytest.mark.parametrize(
    "hint",
    [Hint("os.system"), Hint("__import__"), Hint("list", (Hint("open"),)), Hint("typing.Any"), Hint("Callable")],
    ids=str,
)
def test_a_hint_orlgen_does_not_write_is_refused_in_one_line(hint: Hint):
    """The skyrl reader maps only the forms `orlgen.plan.hints` builds; any other name (a plan
    grown a form the reader lacks) is one line naming it, never a guess."""
    from orlgen.trainers.skyrl.prompt import PromptError, runtime_type

    with pytest.raises(PromptError, match=r"^a type hint orlgen does not write: '"):
        runtime_type(hint)
