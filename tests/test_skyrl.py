"""The skyrl-gym module: what the model is shown, and episodes played by skyrl-gym itself.

Fast tests run in this venv: the `<tool_call>` parser and the answers' layout
(`orlgen.runtime.hermes`), and the checked-in modules' system prompt against TRL's own chat
template rendering the TRL module's methods. The slow ones run generated modules under the real
`skyrl_gym.make` in a venv holding skyrl-gym 0.4.0 and orlgen's runtime alone
(`tests/support/framework_venvs.py`, built once and cached), against the helpdesk env served on a
loopback port by the SDK's server, whose requests an observing middleware logs
(`tests/support/servers/header.py`, no fault injected): so "no request was sent" is counted at
the server.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from orlgen.runtime.hermes import BadCall, Call, Tool, parse_tool_calls, tool_response
from orlgen.runtime.trl.tools import tool_methods
from orlgen.serve import ServerProcess
from pydantic import BaseModel, Field

from tests.support.modules import REPO, load_module

SKYRL_MODULES = sorted((REPO / "generated").glob("*_skyrl.py"))


def test_parse_tool_calls_reads_every_block_in_order():
    text = (
        'Let me check.\n<tool_call>\n{"name": "get_order", "arguments": {"order_id": "ORD-1"}}\n</tool_call>\n'
        '<tool_call>{"name": "list_policies"}</tool_call>\n<tool_call>{"name": "x", "arguments": [1]}</tool_call>'
        "<tool_call>{not json}</tool_call>"
        '<tool_call>{"name": "send_reply", "arguments": {"order_id": "ORD-1"}}'  # stopped at the stop string
    )
    calls = parse_tool_calls(text)
    assert calls[:2] == [Call("get_order", {"order_id": "ORD-1"}), Call("list_policies", {})]
    assert calls[2] == BadCall("the arguments of 'x' must be a JSON object, not list")
    assert isinstance(calls[3], BadCall) and calls[3].problem.startswith("the tool call is not JSON")
    assert calls[4] == Call("send_reply", {"order_id": "ORD-1"})
    assert parse_tool_calls("The answer is 42.") == []
    assert parse_tool_calls('<tool_call>["get_order"]</tool_call>') == [
        BadCall('the tool call must be a JSON object {"name": ..., "arguments": {...}}')
    ]


class _Params(BaseModel):
    source: str | None = Field(None, alias="from")
    limit: int = 10


def test_a_tool_takes_shown_and_wire_names_and_refuses_any_other():
    tool = Tool("record", _Params, aliases={"from": "from_"})
    assert tool.wire_arguments({"from_": "a", "limit": 3}) == {"from": "a", "limit": 3}
    assert tool.wire_arguments({"from": "a"}) == {"from": "a"}
    assert tool.wire_arguments({"colour": "red"}) == "unknown argument 'colour' (this tool takes: from_, limit)"
    assert Tool("list_policies").wire_arguments({"x": 1}) == "unknown argument 'x' (this tool takes: no arguments)"


def test_answers_are_tool_response_blocks_with_images_as_markers_or_parts():
    from PIL import Image

    image = Image.new("RGB", (3, 2), "red")
    answers = ["counter = 2", [{"type": "text", "text": "look:"}, {"type": "image", "image": image}]]
    marked = tool_response(answers, "markers")
    assert marked == {
        "role": "user",
        "content": "<tool_response>\ncounter = 2\n</tool_response><tool_response>\nlook:\n[image: image, 3x2]\n</tool_response>",
    }
    parts = tool_response(answers, "parts")["content"]
    assert [part["type"] for part in parts] == ["text", "image_url", "text"]
    assert parts[0]["text"] == "<tool_response>\ncounter = 2\n</tool_response><tool_response>\nlook:\n"
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert Image.open(io.BytesIO(base64.b64decode(url.partition(",")[2]))).size == (3, 2)
    assert parts[2] == {"type": "text", "text": "\n</tool_response>"}


def _system_prompt(path: Path) -> str:
    """A `_skyrl` module's SYSTEM_PROMPT, read from its source (skyrl_gym is not installed here)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SYSTEM_PROMPT":
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} has no SYSTEM_PROMPT")


def _trl_system_turn(trl_module) -> str:
    """The system turn TRL's Qwen3 chat template renders for the TRL module's tools, as
    GRPOTrainer lists them (the class's public functions, by name)."""
    from transformers.utils.chat_template_utils import render_jinja_template
    from trl.chat_template_utils import qwen3_chat_template

    tools = tool_methods(trl_module.environment_factory)
    rendered, _ = render_jinja_template(
        [[{"role": "user", "content": "x"}]], tools=tools, chat_template=qwen3_chat_template
    )
    system = rendered[0].split("<|im_start|>system\n", 1)[1]
    return system.split("<|im_end|>", 1)[0]


@pytest.mark.parametrize("path", SKYRL_MODULES, ids=lambda path: path.stem)
def test_the_prompt_is_the_text_trls_chat_template_shows(path):
    """Every schema fact the TRL module shows (descriptions, bounds, enums, defaults, required,
    nested structure) reaches the skyrl prompt: it is the same text, byte for byte."""
    trl_module = load_module(path.with_name(path.name.replace("_skyrl.py", ".py")))
    assert _system_prompt(path) == _trl_system_turn(trl_module)


def test_the_helpdesk_prompt_states_the_schema_facts():
    prompt = _system_prompt(REPO / "generated" / "helpdesk_skyrl.py")
    tools = [json.loads(line) for line in prompt.split("<tools>\n")[1].split("\n</tools>")[0].split("\n")]
    search = next(t["function"] for t in tools if t["function"]["name"] == "search_orders")
    limit = search["parameters"]["properties"]["limit"]
    assert "Constraints: >= 1, <= 50. Default: 10." in limit["description"]  # bounds and default
    assert search["parameters"]["properties"]["status"]["enum"] == ["processing", "shipped", "delivered", "cancelled"]
    assert search["parameters"]["required"] == ["query"]
    shipping = next(t["function"] for t in tools if t["function"]["name"] == "update_shipping")
    assert (
        "Structure: {street: string (House number and street"
        in shipping["parameters"]["properties"]["address"]["description"]
    )
    assert [t["function"]["name"] for t in tools] == sorted(t["function"]["name"] for t in tools)


@pytest.fixture(scope="module")
def skyrl_python() -> Path:
    from tests.support.framework_venvs import skyrl_python

    return skyrl_python()


@pytest.fixture(scope="module")
def request_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("requests") / "requests.jsonl"


@pytest.fixture(scope="module")
def helpdesk_logged(request_log):
    """The helpdesk env on a loopback port, every request's path logged to `request_log`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORLGEN_HEADER_LOG", str(request_log))
        server = ServerProcess("examples.helpdesk:Helpdesk", entry="tests.support.servers.header").start()
    try:
        yield server.url
    finally:
        server.stop()


def _play(python: Path, url: str, log: Path, episodes: list[dict]) -> tuple[dict, list[str]]:
    """Run the episodes in the skyrl venv; what it printed, and the request paths the server saw meanwhile."""
    before = len(log.read_text().splitlines()) if log.exists() else 0
    out = _episodes(
        python, {"module": "generated.helpdesk_skyrl", "env_config": {"base_url": url}, "episodes": episodes}
    )
    paths = [json.loads(line)["path"] for line in log.read_text().splitlines()[before:]]
    return out, paths


def _episodes(python: Path, job: dict) -> dict:
    """`tests/support/skyrl_episode.py` run on `job` in the skyrl venv: what it printed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ORLGEN_", "PYTHON"))}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [str(python), "-m", "tests.support.skyrl_episode"],
        input=json.dumps(job), capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _turn(*calls: tuple[str, dict]) -> str:
    return "\n".join(f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls)


# The runtime's counters of the episode's process: one session opened, nothing waited or refused.
RUNTIME_COUNTS = {
    "sessions_opened": 1.0, "capacity_waits": 0.0, "capacity_wait_s": 0.0, "breaker_rejections": 0.0, "images_refused": 0.0,
}  # fmt: skip


@pytest.mark.slow
def test_skyrl_gym_plays_the_scripted_episode_to_one(skyrl_python, helpdesk_logged, request_log):
    """Two calls per turn, through `skyrl_gym.make` on a row read back from parquet: the last step
    scores 1.0 by the env's rule, the session is deleted, and the runtime alone did it."""
    from examples.helpdesk import Helpdesk, scripted_solution

    index = next(i for i, task in enumerate(Helpdesk.list_tasks("train")) if len(scripted_solution(task)) >= 4)
    task = Helpdesk.list_tasks("train")[index]
    calls = scripted_solution(task)
    turns = [_turn(*calls[i : i + 2]) for i in range(0, len(calls), 2)]
    out, paths = _play(skyrl_python, helpdesk_logged, request_log, [{"split": "train", "index": index, "turns": turns}])
    (episode,) = out["episodes"]

    assert out["loaded"] == []  # no openreward, trl or transformers
    assert episode["env_class"] == "helpdesk"
    assert {"split", "task_index", "max_turns", "message"} <= set(episode["extras"])
    system, user = episode["chat"]
    assert system == {"role": "system", "content": out["system_prompt"]}
    assert user["role"] == "user" and task["message"] in user["content"]

    steps = episode["steps"]
    assert len(steps) == len(turns)
    assert [step["reward"] for step in steps] == [0.0] * (len(turns) - 1) + [1.0]
    assert [step["done"] for step in steps] == [False] * (len(turns) - 1) + [True]
    first = steps[0]["observations"]
    assert len(first) == 1 and first[0]["role"] == "user"
    assert first[0]["content"].count("<tool_response>\n") == len(calls[:2])
    assert "Error" not in json.dumps(steps)
    assert episode["metrics"] == {
        "turns": len(turns), "tool_calls": len(calls), "tool_errors": 0, "scored": 1.0, "env_error": 0.0, "reward": 1.0,
        "unfinished": 0.0, **RUNTIME_COUNTS,
    }  # fmt: skip
    assert paths.count("/helpdesk/call") == len(calls)
    assert paths.count("/delete") == 1


@pytest.mark.slow
def test_bad_calls_are_refused_without_a_request_and_close_deletes_the_session(
    skyrl_python, helpdesk_logged, request_log
):
    bad = [
        _turn(("get_order", {"order_id": ""})),  # min_length 1
        _turn(("search_orders", {"query": "x", "colour": "red"})),  # an argument the tool does not take
        _turn(("cancel_order", {"order_id": "ORD-1", "reason": "bored"})),  # not in the enum
        _turn(("search_orders", {"query": "", "limit": 99})),  # over the bound
        _turn(("send_reply", {"order_id": "ORD-1"})),  # a required argument missing
        _turn(("refund_everything", {})),  # no such tool
        "<tool_call>{name: get_order}</tool_call>",  # not JSON
    ]
    episode = {"split": "train", "index": 0, "turns": bad, "max_turns": 20}
    out, paths = _play(skyrl_python, helpdesk_logged, request_log, [episode])
    (played,) = out["episodes"]

    answers = [step["observations"][0]["content"] for step in played["steps"]]
    problems = [
        "order_id",
        "unknown argument 'colour'",
        "reason",
        "limit",
        "template",
        "unknown tool 'refund_everything'",
        "not JSON",
    ]
    for answer, problem in zip(answers, problems, strict=True):
        assert answer.startswith("<tool_response>\nError: ") and problem in answer, answer
        assert len(answer.splitlines()) == 3  # one line between the tags
    assert [step["done"] for step in played["steps"]] == [False] * len(bad)
    assert played["metrics"] == {
        "turns": 7, "tool_calls": 7, "tool_errors": 7, "scored": 0.0, "env_error": 0.0, "unfinished": 1.0, **RUNTIME_COUNTS,
    }  # fmt: skip
    assert "/helpdesk/call" not in paths  # the server never saw one of them
    assert paths.count("/delete") == 1  # close() deleted the unfinished episode's session


@pytest.mark.slow
def test_check_fails_on_a_hand_edited_skyrl_module(tmp_path):
    from tests.support.cli import invoke

    gen = Path(
        shutil.copytree(REPO / "generated", tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    )
    module = gen / "helpdesk_skyrl.py"
    text = module.read_text()
    assert '    env_id = "helpdesk"\n' in text
    module.write_text(text.replace('    env_id = "helpdesk"\n', '    env_id = "helpdesk"\n    max_turns = 99\n', 1))
    result = invoke("check", gen)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{module}: hand-edited")
    assert "\n-    max_turns = 99\n" in result.stdout
    assert "1 generated file(s) out of date" in result.stderr


@pytest.mark.slow
def test_images_task_only_tools_and_a_failed_env_on_both_ors_servers(skyrl_python, ors_server, both_module):
    """The both-env, served by the openreward SDK and by ors-sdk: an image reaches the model as an
    `image_url` part (`images: parts`), a task-only tool runs where the task offers it and is
    refused where it does not, the winning script scores 1.0, and a crashed tool ends the rollout
    unscored (reward 0.0, `env_error`), not as a 0 the model earned."""
    from orlgen.render.jobs import render_module
    from orlgen.snapshot.model import load

    out_dir = Path(both_module.__file__).parent
    (out_dir / "both_skyrl.py").write_text(render_module(load(out_dir / "both.snapshot.json"), None, "skyrl"))
    win = [_turn(("look", {}), ("guess", {"guess": 10})), _turn(("hint", {})), _turn(("submit", {"answer": 10}))]
    episodes = [
        {"split": "train", "index": 0, "turns": win},  # target 10, an even task: `hint` offered
        {"split": "train", "index": 1, "turns": [_turn(("hint", {})), _turn(("crash", {})), _turn(("count", {}))]},
    ]
    job = {"module": "both_skyrl", "path": str(out_dir), "env_config": {"base_url": ors_server.url, "images": "parts"}}
    won, failed = _episodes(skyrl_python, {**job, "episodes": episodes})["episodes"]

    look = won["steps"][0]["observations"][0]["content"]
    assert [part["type"] for part in look] == ["text", "image_url", "text"]
    assert look[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "the board" in look[2]["text"] and "lower" not in look[2]["text"]
    assert "the target is even" in won["steps"][1]["observations"][0]["content"]
    assert [step["reward"] for step in won["steps"]] == [0.0, 0.0, 1.0]
    assert won["metrics"]["scored"] == 1.0

    refused, crashed = (step["observations"][0]["content"] for step in failed["steps"])
    assert (
        refused
        == "<tool_response>\nError: hint is not offered on this task (train[1]); it was not run\n</tool_response>"
    )
    assert "the environment failed" in crashed
    assert len(failed["steps"]) == 2 and failed["steps"][1]["done"] and failed["steps"][1]["reward"] == 0.0
    assert failed["metrics"]["env_error"] == 1.0 and failed["metrics"]["scored"] == 0.0


@pytest.mark.slow
def test_a_conversation_shaped_env_keeps_its_system_message_as_the_system_role(skyrl_python, tmp_path):
    """The interview env serves messages (system, user, assistant, user): its system message opens
    the system turn, before the tools, and is not repeated in the user turn, which carries the
    other messages as labelled text (as the TRL module's prompt does)."""
    from orlgen.render.jobs import render_module
    from orlgen.runtime.data.dataset import tasks_path
    from orlgen.snapshot.model import load

    from examples.interview import SYSTEM

    snapshot = REPO / "generated" / "interview.snapshot.json"
    for path in (snapshot, tasks_path(snapshot)):
        shutil.copy2(path, tmp_path / path.name)
    (tmp_path / "interview_skyrl.py").write_text(render_module(load(snapshot), None, "skyrl"))
    with ServerProcess("examples.interview:Interview") as server:
        job = {"module": "interview_skyrl", "path": str(tmp_path), "env_config": {"base_url": server.url}}
        episode = {"split": "train", "index": 0, "turns": [_turn(("decide", {"hire": True}))]}
        (played,) = _episodes(skyrl_python, {**job, "episodes": [episode]})["episodes"]
    system, user = played["chat"]
    assert system["role"] == "system" and system["content"].startswith(f"{SYSTEM}\n\n# Tools\n")
    assert SYSTEM not in user["content"] and "[system]" not in user["content"]
    assert "I interviewed Ada today." in user["content"] and "[assistant]" in user["content"]
    assert [step["reward"] for step in played["steps"]] == [1.0]


def test_every_checked_in_tool_is_shown_as_get_json_schema_reads_the_trl_method():
    """The stand-in `prompt.shown_schema` builds from the plan reads, to transformers'
    `get_json_schema`, exactly as the TRL module's method does: every tool of every checked-in env
    (hostile names, Args-documented parameters, task-only tools, nested objects included)."""
    from orlgen.plan.planner import plan
    from orlgen.snapshot.model import load
    from orlgen.trainers.skyrl.prompt import shown_schema
    from orlgen.trainers.trl.layout import tool_docstring_text
    from transformers.utils import get_json_schema

    compared = 0
    for path in sorted((REPO / "generated").glob("*.snapshot.json")):
        factory = load_module(path.with_name(path.name.replace(".snapshot.json", ".py"))).environment_factory
        for tool in plan(load(path)).tools:
            shown = shown_schema(tool.shown_name, tool_docstring_text(tool), tool.params)
            assert shown == get_json_schema(getattr(factory, tool.method)), (path.name, tool.method)
            compared += 1
    assert compared == 31
