"""Issue 40, item 3 and three parts of item 12: text from a model or a server that broke a
module or the generator.

- The model's text never raises from the `<tool_call>` parser (`orlgen.runtime.hermes`), however
  it nests, and a turn runs at most `max_tool_calls` calls (the default `orlgen eval` uses), the
  rest answered in one line: through the real `skyrl_gym.make` in the skyrl venv, against the
  helpdesk env whose requests are counted at the server (`tests/test_skyrl.py`'s harness).
- A wire tool name longer than `names.MAX_WIRE_NAME_LENGTH` is refused in one line where it
  enters: capture from a real server, and a snapshot file.
- `orlgen init` refuses a symbolic link in place of a file it would add to.
- A task field named like a column a trainer adds to the row (SkyRL's `env_class`, `max_turns`)
  is stored under the `task_` prefix, as the reserved names already are.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from orlgen.runtime import hermes
from orlgen.runtime.hermes import BadCall, Call, parse_tool_calls
from orlgen.snapshot.model import Reward, Snapshot, Split, SplitTasks, Target, Task, Tool

from tests.support.cli import invoke
from tests.support.text_envs import LONG_NAME
from tests.test_skyrl import (  # the skyrl venv, the logged helpdesk server and the episode harness
    _episodes,
    _turn,
    helpdesk_logged,  # noqa: F401
    request_log,  # noqa: F401
    skyrl_python,  # noqa: F401
)

# ── item 3: the model's text is answered, never raised ───────────────────────


def _nested(depth: int) -> str:
    """A call whose JSON nests `depth` levels (built as text: json cannot write it that deep)."""
    return '{"name": "get_order", "arguments": {"order_id": ' + "[" * (depth - 2) + '"x"' + "]" * (depth - 2) + "}}"


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>" + "[" * 1000,
        '<tool_call>{"name": "x", "arguments": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}</tool_call>",
        "<tool_call>" + _nested(3000) + "</tool_call>",
    ],
    ids=["open-brackets", "deep-arguments", "deep-closed"],
)
def test_text_nested_past_pythons_recursion_limit_is_one_bad_call(text):
    (call,) = parse_tool_calls(text)
    assert isinstance(call, BadCall)
    assert len(call.problem.splitlines()) == 1 and len(call.problem) < 300, call.problem


def test_arguments_nested_past_the_bound_are_refused_before_anything_is_sent():
    """Json reads a few hundred levels, but a request serialiser or validator deeper in the stack
    may not: past `MAX_CALL_DEPTH` the call is refused here, in one line."""
    inside = _nested(hermes.MAX_CALL_DEPTH)
    (call,) = parse_tool_calls(f"<tool_call>{inside}</tool_call>")
    assert isinstance(call, Call) and call.name == "get_order"
    (deep,) = parse_tool_calls(f"<tool_call>{_nested(hermes.MAX_CALL_DEPTH + 1)}</tool_call>")
    assert deep == BadCall(f"the tool call is nested deeper than {hermes.MAX_CALL_DEPTH} levels")


def test_a_huge_tool_name_is_quoted_short_in_the_answer():
    (call,) = parse_tool_calls('<tool_call>{"name": "' + "n" * 1_000_000 + '", "arguments": [1]}</tool_call>')
    assert isinstance(call, BadCall) and len(call.problem) < 300, call.problem[:300]


_PIECES = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        "<tool_call>\n",
        "[",
        "]",
        "{",
        "}",
        '"name"',
        '"arguments"',
        ":",
        ",",
        '"',
        "\\",
        "\\u",
        "\\ud800",
        "null",
        "1e999",
        "9" * 5000,
        "NaN",
        "-Infinity",
        '{"name": "get_order", "arguments": ',
        '{"order_id": "ORD-1"}',
        "\x00",
        "é",
        "\u2028",
    ]
)
_TEXTS = st.one_of(
    st.lists(st.one_of(_PIECES, st.text(max_size=5)), max_size=60).map("".join),
    st.tuples(st.sampled_from("[{"), st.integers(1, 5000)).map(lambda x: "<tool_call>" + x[0] * x[1]),
)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(text=_TEXTS)
def test_no_text_raises_from_the_parser(text):
    for call in parse_tool_calls(text):
        assert isinstance(call, Call | BadCall)
        if isinstance(call, BadCall):
            assert len(call.problem.splitlines()) == 1, call.problem


def _job(url: str, episodes: list[dict], **options) -> dict:
    return {"module": "generated.helpdesk_skyrl", "env_config": {"base_url": url, **options}, "episodes": episodes}


def _calls(log: Path, before: int) -> int:
    return [json.loads(line)["path"] for line in log.read_text().splitlines()[before:]].count("/helpdesk/call")


@pytest.mark.slow
def test_a_turn_runs_at_most_the_cap_and_says_so_in_one_line(skyrl_python, helpdesk_logged, request_log):  # noqa: F811
    """300 calls in one turn: `MAX_TOOL_CALLS_PER_TURN` reach the server, the rest are counted as
    the model's failed calls and answered by one block; then a turn of 1,000 `[` is answered, not
    raised. `max_tool_calls` in the env config sets the cap."""
    many = _turn(*[("get_order", {"order_id": "ORD-75603"})] * 300)
    turns = [many, "<tool_call>" + "[" * 1000, _turn(("get_order", {"order_id": "ORD-75603"}))]
    episode = {"split": "train", "index": 0, "turns": turns, "max_turns": 5}
    before = len(request_log.read_text().splitlines()) if request_log.exists() else 0
    (played,) = _episodes(skyrl_python, _job(helpdesk_logged, [episode]))["episodes"]
    assert _calls(request_log, before) == hermes.MAX_TOOL_CALLS_PER_TURN + 1

    capped, deep, last = (step["observations"][0]["content"] for step in played["steps"])
    blocks = capped.split("</tool_response>")[:-1]
    assert len(blocks) == hermes.MAX_TOOL_CALLS_PER_TURN + 1
    skipped = 300 - hermes.MAX_TOOL_CALLS_PER_TURN
    assert blocks[-1] == (
        f"<tool_response>\nError: {skipped} more tool calls in this turn were not run "
        f"(at most {hermes.MAX_TOOL_CALLS_PER_TURN} per turn)\n"
    )
    assert (
        deep
        == f"<tool_response>\nError: the tool call is nested deeper than {hermes.MAX_CALL_DEPTH} levels\n</tool_response>"
    )
    assert "Error" not in last
    assert [step["done"] for step in played["steps"]] == [False, False, False]
    assert played["metrics"]["tool_calls"] == 300 + 2
    assert played["metrics"]["tool_errors"] == skipped + 1

    before = len(request_log.read_text().splitlines())
    capped = {"split": "train", "index": 0, "turns": [many]}
    (played,) = _episodes(skyrl_python, _job(helpdesk_logged, [capped], max_tool_calls=3))["episodes"]
    assert _calls(request_log, before) == 3
    assert played["steps"][0]["observations"][0]["content"].count("<tool_response>") == 4


# ── item 12 (a): a wire tool name is bounded where it enters ─────────────────


def _sealed_with_tool_named(name: str) -> str:
    """A snapshot's interface text, sealed as `orlgen snapshot` seals it, holding a tool of that
    name: built without validation (a server's answer of that name is refused on capture now)."""
    tool = Tool.model_construct(
        name=name, description="A tool.", input_schema=None, shared=True, offered_on=[], property_order={}
    )
    return Snapshot.model_construct(
        format_version=2,
        name="attacked",
        target=Target(kind="url", value="http://127.0.0.1:9", env="attacked"),
        secret_names=[],
        reward=Reward(),
        deployment=None,
        splits=[Split(name="train", num_tasks=1)],
        tools=[tool],
        terminal_tool=None,
        conversation=False,
        system_prompt=None,
        probed_tasks=[],
        toolset=None,
        score_group=False,
        tasks={"train": SplitTasks(coverage="all", tasks=[Task(index=0, spec={"prompt": "p"})])},
        task_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
        tasks_sha256=None,
        sha256="",
    ).to_json()


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "generated").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_snapshot_holding_a_megabyte_tool_name_is_refused_in_one_line(workdir):
    from orlgen.runtime.data import tasks_file
    from orlgen.snapshot.model import tasks_path

    snapshot = workdir / "generated" / "attacked.snapshot.json"
    snapshot.write_text(_sealed_with_tool_named("x" * 1_000_000))
    tasks_path(snapshot).write_text(tasks_file.encode([("train", 0, {"prompt": "p"})]))
    result = invoke("generate", str(snapshot))
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "'xxxxxxxxxx" in line and "1000000 characters" in line and len(line) < 600, line[:600]
    assert sorted(path.name for path in (workdir / "generated").iterdir()) == [
        "attacked.snapshot.json",
        "attacked.tasks.jsonl",
    ]


def test_a_tool_name_at_the_bound_is_kept():
    from orlgen.names import MAX_WIRE_NAME_LENGTH
    from orlgen.snapshot.model import TerminalTool

    assert Tool(name="y" * MAX_WIRE_NAME_LENGTH, description="", input_schema=None, shared=True).name
    with pytest.raises(ValueError, match=f"at most {MAX_WIRE_NAME_LENGTH}"):
        Tool(name="y" * (MAX_WIRE_NAME_LENGTH + 1), description="", input_schema=None, shared=True)
    with pytest.raises(ValueError, match=f"at most {MAX_WIRE_NAME_LENGTH}"):
        TerminalTool(name="z" * (MAX_WIRE_NAME_LENGTH + 1), arg=None, description="")


@pytest.mark.slow
def test_a_server_offering_a_megabyte_tool_name_fails_the_capture_in_one_line(workdir):
    from orlgen.capture.live import CaptureError, capture

    with pytest.raises(CaptureError) as caught:
        capture("tests.support.text_envs:LongToolName")
    message = str(caught.value)
    assert len(message.splitlines()) == 1 and len(message) < 1300, message[:1300]
    assert "'tttttttttt" in message and f"{len(LONG_NAME)} characters" in message


# ── item 12 (b): `orlgen init` writes no file through a link ─────────────────


@pytest.mark.parametrize("name", [".gitattributes", ".pre-commit-config.yaml", "pyproject.toml"])
def test_init_refuses_a_symbolic_link_and_writes_nothing(tmp_path, monkeypatch, name):
    outside = tmp_path / "outside"
    outside.write_text("secret: the outside file's content\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / name).symlink_to(outside)
    monkeypatch.chdir(repo)
    result = invoke("init")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert name in line and "symbolic link" in line
    assert (repo / name).is_symlink() and outside.read_text() == "secret: the outside file's content\n"
    assert sorted(os.listdir(repo)) == [name]  # nothing else written either


# ── item 12 (c): a task field named like a column a trainer adds ─────────────


def test_a_task_field_named_like_a_column_skyrl_adds_is_prefixed():
    from orlgen.plan.columns import dataset_columns
    from orlgen.plan.reserved import TRAINER_COLUMNS
    from orlgen.schema import parse_schema
    from orlgen.trainers import TRAINER_NAMES

    assert sorted(TRAINER_COLUMNS) == sorted(TRAINER_NAMES)  # a new trainer declares the columns it adds

    schema = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ("env_class", "max_turns", "prompt", "level")},
    }
    planned = dataset_columns(parse_schema(schema, "task schema"))
    columns = {ast.literal_eval(plan.field): ast.literal_eval(plan.name) for plan in planned}
    assert columns == {
        "env_class": "task_env_class",
        "max_turns": "task_max_turns",
        "prompt": "task_prompt",
        "level": "level",
    }


@pytest.mark.slow
def test_skyrl_plays_a_task_whose_fields_are_named_like_its_columns(skyrl_python, tmp_path):  # noqa: F811
    """`build_dataset` of a skyrl module whose tasks have `env_class` and `max_turns` fields:
    SkyRL reads the row's own `env_class`, the env reads SkyRL's `max_turns`, and the task's
    values reach the extras under `task_`."""
    from orlgen.capture.live import capture
    from orlgen.render.jobs import render_module
    from orlgen.review.files import write_files
    from orlgen.serve import ServerProcess

    snapshot = capture("tests.support.text_envs:TaskColumns")
    write_files(snapshot.files(tmp_path / snapshot.file_name))
    (tmp_path / "taskcolumns_skyrl.py").write_text(render_module(snapshot, None, "skyrl"))
    with ServerProcess("tests.support.text_envs:TaskColumns") as server:
        job = {"module": "taskcolumns_skyrl", "path": str(tmp_path), "env_config": {"base_url": server.url}}
        episode = {"split": "train", "index": 0, "turns": [_turn(("submit", {}))], "max_turns": 5}
        (played,) = _episodes(skyrl_python, {**job, "episodes": [episode]})["episodes"]
    assert played["env_class"] == "taskcolumns"
    assert {"task_env_class", "task_max_turns", "task_prompt", "max_turns"} <= set(played["extras"])
    assert "its own prompt" in played["chat"][-1]["content"]
    assert [step["reward"] for step in played["steps"]] == [1.0]
