"""The docstring parser and the prose run in linear time on any input: megabyte descriptions in
the shapes that made the old regular expressions backtrack (`":param" + " " * 1_000_000 + "x"`
took about 80 minutes) are parsed correctly, and a module is rendered from one.

Each check runs in a child interpreter with a deadline. The deadline is a guard against a hang,
not a performance assertion: a linear parser takes a second or two here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.support.modules import REPO

DEADLINE = 20.0  # seconds; the old parser needed hours for the first shape alone


def run_child(code: str) -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=DEADLINE,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"no answer within {DEADLINE:.0f} s: the text handling is not linear") from exc
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "ok\n"


def test_megabyte_docstrings_in_backtracking_shapes_are_parsed_correctly():
    run_child("""
        from orlgen.plan import docstrings

        N = 1_000_000
        unchanged = {  # no section, field or entry in any of these: all of it is prose
            "rest": ":param" + " " * N + "x",
            "rest-name": ":param " + "a" * N,
            "bare": "x" + " " * N + "-",
            "bare-bullet": "- `" + "x" * N,
            "header": "Args" + " " * N + "x",
            "bold": "**" + "A" * N,
            "hashes": "#" * N + " x",
        }
        for name, text in unchanged.items():
            parsed = docstrings.parse(text, ["x", "a"])
            assert (parsed.prose, parsed.params, parsed.returns) == (text, {}, ""), name
        entry = docstrings.parse("Args:\\n    x" + " " * N + ": the x", ["x"])
        assert entry.params == {"x": "the x"} and entry.prose == ""
        typed = docstrings.parse("Args:\\n    x (" + "a" * N + "): typed", ["x"])
        assert typed.params == {"x": "typed"}
        numpy = docstrings.parse("Parameters\\n" + "-" * N + "\\nx" + " " * N + ": int\\n    The x.", ["x"])
        assert numpy.params == {"x": "The x."} and numpy.prose == ""
        lines = docstrings.parse("x: a\\n" * (N // 5), ["x"])
        assert lines.params == {"x": "a"} and lines.prose.count("x: a") == N // 5 - 1  # taken once
        assert docstrings.safe("Args:" * (N // 5)) == "Args :" * (N // 5)
        assert docstrings.safe("(choices:" * (N // 9)) == "(choices :" * (N // 9)
        print("ok")
        """)


def test_a_module_renders_from_megabyte_descriptions():
    run_child("""
        from orlgen.plan import prose
        from orlgen.render.jobs import render_module
        from orlgen.schema import parse_schema
        from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Tool

        N = 1_000_000
        words = "x" + " " * N + "-"
        nested = {
            "type": "object",
            "properties": {"a": {"type": "string", "description": words, "pattern": "^" + "a" * N + "$"}},
        }
        schema = parse_schema({"type": "object", "properties": {"x": nested}}, "tool")
        (_, node), = schema.resolve(schema.root).properties
        shown = prose.structure(node, schema)
        assert shown.startswith("{a?: string (x -; matching `^aaa") and len(shown) < 2 * N + 100
        snapshot = Snapshot(
            name="big",
            target=Target(kind="url", value="http://127.0.0.1:9", env="big"),
            splits=[Split(name="train", num_tasks=1)],
            tools=[Tool(name="act", description=":param" + " " * N + "x", input_schema=None, shared=True)],
            terminal_tool=None,
            probed_tasks=[],
            tasks={"train": SplitTasks(coverage="none", tasks=[])},
            task_schema={"type": "object", "properties": {}},
        ).canonical()
        assert ":param" + " " * N + "x" in render_module(snapshot)
        print("ok")
        """)
