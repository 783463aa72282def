"""Tool and parameter names as the model sees them (what `get_json_schema` reads off the
generated methods, as TRL does): look-alike tool names each get a distinct ASCII name, the wire
name that already is one keeps it whatever the order, every name is at most 64 characters, and
every rename is reported (issue 26, item 13)."""

from __future__ import annotations

import inspect
import re

import pytest
from orlgen import lookalike, names
from orlgen.plan.planner import lookalike_warnings, printable
from orlgen.render.jobs import render_module
from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Tool

from tests.support.modules import load_module

WIRES = ["echo", "Echo", "\u0435cho", "ech\u043e", "echo\u200b", "\uff45cho", "e\u0301cho", "x" * 300, "a" * 64]
LONG_PARAM = "p" * 200


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tools = [
        Tool(
            name=wire,
            description="Do it.",
            shared=True,
            input_schema={"type": "object", "properties": {LONG_PARAM: {"type": "string"}}, "required": [LONG_PARAM]},
        )
        for wire in WIRES
    ]
    snapshot = Snapshot(
        name="look",
        target=Target(kind="url", value="http://127.0.0.1:9", env="look"),
        splits=[Split(name="train", num_tasks=1)],
        tools=tools,
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="none", tasks=[])},
        task_schema={"type": "object", "properties": {}},
    ).canonical()
    path = tmp_path_factory.mktemp("look") / "look.py"
    path.write_text(render_module(snapshot))
    return snapshot, load_module(path).LookEnv


def _shown(env_class) -> dict[str, dict]:
    """Tool name → the JSON schema TRL shows the model, for every wire tool of the class."""
    from transformers.utils import get_json_schema

    return {
        name: get_json_schema(getattr(env_class, name))["function"]
        for name in env_class.__dict__
        if not name.startswith("_") and callable(getattr(env_class, name))
    }


def test_every_tool_has_a_distinct_ascii_name_of_at_most_64_characters(env):
    _, env_class = env
    shown = [schema["name"] for schema in _shown(env_class).values()]
    assert len(shown) == len(WIRES) and "Echo" in shown and "echo" in shown
    assert all(lookalike.problem(name) is None and len(name) <= 64 for name in shown)
    assert len({lookalike.skeleton(name) for name in shown}) == len(WIRES)
    for schema in _shown(env_class).values():
        (param,) = schema["parameters"]["properties"]
        assert len(param) <= 64 and param.isidentifier()


def test_the_ascii_wire_name_keeps_its_name_and_look_alikes_are_reported(env):
    snapshot, env_class = env
    assert "echo" in env_class.__dict__ and "a" * 64 in env_class.__dict__
    assert re.search(r'_call_tool\(\s*"echo",', inspect.getsource(env_class.echo))  # it calls the ASCII wire
    warned = lookalike_warnings(snapshot)
    for wire in ("\u0435cho", "ech\u043e", "echo\u200b"):
        shown = printable(wire)
        assert any(line.startswith(f"tool '{shown}'") and "the model is shown it as '" in line for line in warned)


def test_names_of_any_length_are_cut_to_64_and_stay_distinct():
    made = names.method_names(["y" * 100] * 3 + ["y" * 64], taken={"reset"})
    assert [len(name) for name in made] == [64] * 4 and len(set(made)) == 4
    assert "y" * 64 in made  # the name that fits as it is keeps it
    assert [len(name) for name in names.param_names(["q" * 100, "q" * 100])] == [64, 64]
    assert names.identifier_problem("m" * 65) == "longer than 64 characters"
