"""The docstring parser and the prose run in linear time on any input: megabyte descriptions in
the shapes that made the old regular expressions backtrack (`":param" + " " * 1_000_000 + "x"`
took about 80 minutes) are parsed correctly, and a module is rendered from one.

Each check runs in a child interpreter with a deadline. The deadline is a guard against a hang,
not a performance assertion: a linear parser takes a second or two here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.support.modules import REPO

DEADLINE = 20.0  # seconds; the old parser needed hours for the first shape alone


def run_child(code: str, deadline: float = DEADLINE) -> None:
    try:
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=deadline,
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"no answer within {deadline:.0f} s: the text handling is not linear") from exc
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
        assert ":param x" in render_module(snapshot)  # its whitespace run collapsed: get_json_schema reads it
        print("ok")
        """)


# The shapes that make `transformers.utils.get_json_schema`'s patterns (`description_re`,
# `args_re`, `returns_re`: `(.*?)[\n\s]*(Args:|Returns:|Raises:|\Z)`, and `args_split_re`) cost
# the square of a whitespace run: every run, of every character `\s` matches, in the prose, a
# line's indentation, an argument's and the returns' text, about 100 KB each.
_SHAPES = {
    "rest": '":param" + " " * N + "x"',
    "spaces": '"x" + " " * N + "-"',
    "tabs": '"a" + "\\t" * N + "b"',
    "unicode-separators": '"a" + "\\u2028\\u2029\\x85\\x1c\\u3000" * (N // 5) + "b"',
    "indent": '"a\\n" + " " * N + "b"',
    "blank-lines": '" \\n" * (N // 2) + "x"',
    "section-word": '"Args:" + " " * N + "x"',
    "returns": '"Do.\\n\\nReturns:\\n" + " " * N + "x\\n" + " " * N + "y"',
    "args-entry": '"Do.\\n\\nArgs:\\n    x:" + " " * N + "the x\\n" + " " * N + "more"',
    "raises": '"Do.\\n\\nRaises:\\n    E:" + " " * N + "when"',
}


@pytest.mark.slow
def test_get_json_schema_reads_every_generated_method_in_linear_time(tmp_path):
    """TRL calls `get_json_schema` on every tool method for every prompt: on the worst 100 KB
    shapes, in the tool's description and in a parameter's, each call must take under a second
    (it took 47 s at 60,000 spaces before runs of whitespace were collapsed). The child's
    deadline only guards against a hang: rendering ten 100 KB tools takes a while."""
    tools = ", ".join(
        f'Tool(name="t_{i}", description={shape}, shared=True, input_schema={{"type": "object", '
        f'"properties": {{"x": {{"type": "string", "description": {shape}}}}}, "required": ["x"]}})'
        for i, shape in enumerate(_SHAPES.values())
    )
    code = f"""
        import time
        from pathlib import Path
        from orlgen.render.jobs import render_module
        from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Tool
        from tests.support.modules import load_module
        from transformers.utils import get_json_schema

        N = 100_000
        snapshot = Snapshot(
            name="wide",
            target=Target(kind="url", value="http://127.0.0.1:9", env="wide"),
            splits=[Split(name="train", num_tasks=1)],
            tools=[{tools}],
            terminal_tool=None,
            probed_tasks=[],
            tasks={{"train": SplitTasks(coverage="none", tasks=[])}},
            task_schema={{"type": "object", "properties": {{}}}},
        ).canonical()
        path = Path({str(tmp_path)!r}) / "wide.py"
        path.write_text(render_module(snapshot))
        env = load_module(path).WideEnv
        def warm(x: str) -> str:
            return x
        warm.__doc__ = "Warm up.\\n\\nArgs:\\n    x: a text."
        get_json_schema(warm)  # its first call imports what it needs: not what is timed
        for i, name in enumerate({list(_SHAPES)!r}):
            method = getattr(env, f"t_{{i}}")
            start = time.perf_counter()
            schema = get_json_schema(method)
            took = time.perf_counter() - start
            assert took < 1.0, f"{{name}}: get_json_schema took {{took:.1f}} s"
            assert schema["function"]["parameters"]["properties"]["x"]["description"], name
        print("ok")
        """
    run_child(code, deadline=300)
