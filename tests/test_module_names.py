"""The names a generated module binds for itself: a tool or model never takes one (it is renamed
like a keyword, its wire name kept), and the module imports a name only when it uses it."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from orlgen.plan.planner import plan
from orlgen.plan.reserved import (
    RESERVED_CLASSES,
    RESERVED_METHODS,
    SKYRL_GLOBALS,
    SKYRL_MODULE_NAMES,
    TRL_GLOBALS,
    TRL_MODULE_NAMES,
    VERIFIERS_GLOBALS,
    VERIFIERS_MODULE_NAMES,
)
from orlgen.render.jobs import render_module
from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Task, Tool
from support.modules import load_module

GENERATED = Path(__file__).resolve().parent.parent / "generated"
MODULES = sorted(path for path in GENERATED.glob("*.py") if path.with_suffix(".snapshot.json").exists())


def snapshot(*tools: Tool) -> Snapshot:
    return Snapshot(
        name="named",
        target=Target(kind="url", value="http://127.0.0.1:9", env="named"),
        splits=[Split(name="train", num_tasks=1)],
        tools=list(tools),
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="all", tasks=[Task(index=0, spec={"prompt": "x"})])},
        task_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
    ).canonical()


def _bound_class(node: ast.Assign) -> bool:
    """`CancelOrderParams = helpdesk_models.CancelOrderParams`: a params model bound from the env's
    models file, a class like those the module defines itself."""
    value = node.value
    return isinstance(value, ast.Attribute) and value.attr[:1].isupper() and not value.attr.isupper()


def _top_level_names(tree: ast.Module) -> set[str]:
    """What the module binds at top level but its classes (the env class and the params models,
    defined or bound from the env's models file)."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Assign) and not _bound_class(node):
            found |= {target.id for target in node.targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Try):  # the contract guard's import
            found |= _top_level_names(ast.Module(body=node.body, type_ignores=[]))
    return {name for name in found if not name.startswith("__")}


def test_the_reserved_names_are_what_the_checked_in_modules_bind():
    bound: set[str] = set()
    for path in MODULES:
        tree = ast.parse(path.read_text())
        names = _top_level_names(tree)
        assert (
            names <= TRL_MODULE_NAMES
        ), f"{path.name} binds names a tool could take: {sorted(names - TRL_MODULE_NAMES)}"
        bound |= names
        env_class = load_module(path).environment_factory
        in_class = {name for name, value in vars(env_class).items() if not name.startswith("__")}
        in_class -= {name for name, value in vars(env_class).items() if inspect.isfunction(value)}  # the tools
        assert in_class <= RESERVED_METHODS, f"{path.name}'s class binds {sorted(in_class - RESERVED_METHODS)}"
    assert set(TRL_GLOBALS) <= bound  # the table names nothing a module no longer binds
    assert TRL_MODULE_NAMES <= RESERVED_CLASSES


@pytest.mark.parametrize(
    ("suffix", "table", "own"),
    [("_verifiers", VERIFIERS_MODULE_NAMES, VERIFIERS_GLOBALS), ("_skyrl", SKYRL_MODULE_NAMES, SKYRL_GLOBALS)],
)
def test_the_other_trainers_reserved_names_are_what_their_checked_in_modules_bind(suffix, table, own):
    paths = sorted(GENERATED.glob(f"*{suffix}.py"))
    assert paths, f"no checked-in {suffix} module"
    bound: set[str] = set()
    for path in paths:
        names = _top_level_names(ast.parse(path.read_text()))
        assert names <= table, f"{path.name} binds names a model class could take: {sorted(names - table)}"
        bound |= names
    assert set(own) <= bound  # the table names nothing a module no longer binds
    assert table <= RESERVED_CLASSES


@pytest.mark.parametrize("wire", ["tool_method", "spec", "build_dataset", "environment_factory", "reward_funcs"])
def test_a_tool_named_like_a_module_name_is_renamed_and_keeps_its_wire_name(wire):
    planned = plan(snapshot(Tool(name=wire, description="Do it.", input_schema=None, shared=True))).tools[0]
    assert (planned.method, planned.renamed, planned.wire) == (f"{wire}_", True, repr(wire))


@pytest.mark.slow  # a render (datamodel-code-generator, black) and an import
def test_a_tool_named_tool_method_does_not_break_the_tools_after_it(tmp_path):
    tools = [Tool(name=name, description="Do it.", input_schema=None, shared=True) for name in ("tool_method", "zeta")]
    path = tmp_path / "named.py"
    path.write_text(render_module(snapshot(*tools)))
    module = load_module(path)
    assert {module.NamedEnv.tool_method_.__name__, module.NamedEnv.zeta.__name__} == {"tool_method", "zeta"}


@pytest.mark.slow  # a render and a ruff run
def test_a_model_field_named_unset_imports_no_unset(tmp_path):
    """ruff's F401: a required field `UNSET: str` is no use of the runtime's `UNSET`."""
    schema = {"type": "object", "properties": {"UNSET": {"type": "string"}}, "required": ["UNSET"]}
    path = tmp_path / "named.py"
    path.write_text(
        render_module(snapshot(Tool(name="lookup", description="Look up.", input_schema=schema, shared=True)))
    )
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--select", "F", str(path)]
    linted = subprocess.run(ruff, capture_output=True, text=True, cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout
