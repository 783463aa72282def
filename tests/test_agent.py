"""The agent module (`<env>_agent.py`): its episode function plays the both-env
(`tests/support/envs/both.py`) on each real ORS server implementation against a scripted
OpenAI-compatible endpoint on loopback, streaming and not.

Two endpoints stand in for the model: the scripted stub in a child process
(`tests/support/stub_openai.py`: `look`, then `submit` of the task's target, JSON or SSE), and
an in-process `ChatServer` playing a test's own script. The ORS servers wear the counting
middleware of `tests.support.servers.capacity` (it counts sessions and `/call` requests; no
fault is switched on here).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest

from bench.chat_server import ChatServer, answer, call, serving, turn_of
from tests.support.modules import generated
from tests.support.servers.both import KINDS, BothServer
from tests.support.servers.capacity import stats
from tests.support.verifiers_eval import Stub
from tests.support.waiting import wait_for

COUNTING = ("tests.support.servers.capacity:Faults",)


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    """The both-env's agent module (with its TRL module and models file beside it)."""
    return generated("tests.support.envs.both:Both", tmp_path_factory.mktemp("both"), ("agent", "trl"))


@pytest.fixture(scope="module", params=KINDS)
def server(request):
    with BothServer(request.param, middleware=COUNTING) as running:
        yield running


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    with Stub(tmp_path_factory.mktemp("stub"), "win") as running:
        yield running


def play(agent, server, url: str, task: Any = 0, **options: Any):
    return asyncio.run(agent.run_episode(task, base_url=url, model="m", env={"base_url": server.url}, **options))


class Script:
    """A test's own endpoint: turn n of every episode answers `turns[n]` (fault-free; the last
    repeats). Keeps each request body."""

    def __init__(self, *turns: dict[str, Any]) -> None:
        self.turns = turns
        self.requests: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(body)
        return self.turns[min(turn_of(body), len(self.turns) - 1)]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_winning_script_scores_the_envs_reward_and_the_image_reaches_the_model(agent, server, stub, stream):
    before = stats(server.url)
    row = agent.build_dataset(num_tasks=2)[1]
    trajectory = play(agent, server, stub.url, row, stream=stream, seed=7)

    assert (trajectory.reward, trajectory.finished, trajectory.stop) == (1.0, True, "episode_over")
    assert (trajectory.split, trajectory.task_index) == ("train", 1)
    assert [m["role"] for m in trajectory.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert trajectory.messages[0]["content"].startswith("Task 1:")
    # the raw choice behind each assistant message, nothing elsewhere
    assert [choice is not None for choice in trajectory.choices] == [False, True, False, True, False]
    assert trajectory.choices[3]["message"]["tool_calls"][0]["function"]["name"] == "submit"
    assert trajectory.metrics == {"turns": 2.0, "tool_calls": 2.0, "tool_errors": 0.0, "scored": 1.0, "env_error": 0.0}
    # the image of `look` reached the next request as an image_url part, and each turn took the next seed
    asked = stub.requests()[-2:]
    image, caption = asked[1]["messages"][-1]["content"]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")
    assert caption == {"type": "text", "text": "the board"}
    assert [body["seed"] for body in asked] == [7, 8] and all(body.get("stream") is stream for body in asked)
    after = stats(server.url)
    assert after["created"] - before["created"] == 1 and after["deleted"] - before["deleted"] == 1
    assert after["open"] == 0


def test_the_tools_shown_are_the_snapshots_schemas_whole(agent):
    by_name = {tool["function"]["name"]: tool["function"] for tool in agent.TOOLS}
    guess = by_name["guess"]["parameters"]
    assert guess["required"] == ["guess"]
    assert guess["properties"]["guess"] == {
        "type": "integer",
        "description": "A number between 0 and 100.",
        "minimum": 0,
        "maximum": 100,
    }
    assert by_name["submit"]["description"] == "Submit the final answer; this ends the episode."
    assert "Offered on some tasks only" in by_name["hint"]["description"]
    assert set(agent.CALLS) == set(by_name)


def test_a_bad_call_is_answered_in_one_line_and_nothing_is_sent(agent, server):
    script = Script(
        call("guess", {"guess": 500}, 0),  # past the schema's maximum
        call("gues", {"guess": 5}, 1),  # no such tool
        call("guess", "{not json", 2),
        call("guess", {"guess": 5, "extra": 1}, 3),  # an argument the tool does not take
        answer("done"),
    )
    before = stats(server.url)
    with serving(ChatServer(script)) as endpoint:
        trajectory = play(agent, server, endpoint.url)
    answers = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert answers[0].startswith("Error: invalid arguments for guess: guess:") and "100" in answers[0]
    assert answers[1].startswith("Error: unknown tool 'gues' (the tools are: count, crash, guess")
    assert answers[2].startswith("Error: the arguments of 'guess' are not JSON")
    assert answers[3].startswith("Error: invalid arguments for guess: unknown argument 'extra'")
    assert all("\n" not in text for text in answers)
    assert stats(server.url)["calls"] == before["calls"], "a refused call reached the server"
    assert trajectory.metrics["tool_calls"] == 4.0 and trajectory.metrics["tool_errors"] == 4.0
    assert (trajectory.reward, trajectory.stop) == (None, "answered")  # unscored: never a silent 0.0


def test_a_task_only_tool_is_shown_and_run_only_on_tasks_that_offer_it(agent, server):
    script = Script(call("hint", {}, 0), answer("done"))
    with serving(ChatServer(script)) as endpoint:
        offered = play(agent, server, endpoint.url, 0)  # task id 0: even, offers `hint`
        lacking = play(agent, server, endpoint.url, 1)
    shown = [[tool["function"]["name"] for tool in body["tools"]] for body in script.requests[::2]]
    assert "hint" in shown[0] and "hint" not in shown[1]
    assert offered.messages[2]["content"] == "the target is even"
    assert lacking.messages[2]["content"] == "Error: hint is not offered on this task (train[1]); it was not run"
    assert lacking.metrics["tool_errors"] == 1.0


def test_tool_calls_past_the_cap_are_not_run(agent, server):
    many = {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("count", {}, i)["tool_calls"][0] for i in range(5)],
    }
    before = stats(server.url)
    with serving(ChatServer(Script(many, answer("done")))) as endpoint:
        trajectory = play(agent, server, endpoint.url, max_tool_calls=2)
    assert len(trajectory.messages[1]["tool_calls"]) == 2  # the conversation holds what ran
    assert [m["role"] for m in trajectory.messages[2:4]] == ["tool", "tool"]
    assert stats(server.url)["calls"] - before["calls"] == 2
    assert trajectory.metrics["tool_calls"] == 5.0 and trajectory.metrics["tool_errors"] == 3.0


@pytest.mark.parametrize("where", ["tool", "model"])
def test_a_cancelled_episode_deletes_its_session(agent, server, where):
    """Trainers cancel slow episodes: cancelled while a tool runs (3 s) or while the model thinks
    (until the test ends), the session is deleted at once, not when the call returns."""
    release = threading.Event()

    def slow_model(body: dict[str, Any]) -> dict[str, Any]:
        if where == "model" or turn_of(body) > 0:
            release.wait(60)
            return answer("too late")
        return call("wait", {"seconds": 3}, 0)

    before = stats(server.url)

    async def cancelled() -> None:
        task = asyncio.ensure_future(
            agent.run_episode(0, base_url=endpoint.url, model="m", env={"base_url": server.url})
        )
        while stats(server.url)["created"] == before["created"] or (where == "tool" and not asked):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # the tool call (or the model's turn) is under way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asked: list[int] = []
    server_script = ChatServer(lambda body: asked.append(1) or slow_model(body))
    with serving(server_script) as endpoint:
        try:
            asyncio.run(cancelled())
            assert wait_for(lambda: stats(server.url)["deleted"] - before["deleted"] == 1)
            assert stats(server.url)["open"] == 0
        finally:
            release.set()
    if where == "tool":  # the abandoned call ends on its own: before the server stops, so it logs nothing
        time.sleep(3)


def test_build_dataset_gives_plain_rows_or_a_dataset(agent):
    rows = agent.build_dataset("test")
    assert rows == [{"split": "test", "task_index": 0, "id": 100, "target": 3}]
    dataset = agent.build_dataset(num_tasks=3, as_dataset=True)
    assert dataset.column_names == ["split", "task_index", "id", "target"] and len(dataset) == 3


def test_a_dead_env_is_an_unscored_episode_without_a_model_turn(agent):
    script = Script(answer("never asked"))
    with serving(ChatServer(script)) as endpoint:
        trajectory = asyncio.run(
            agent.run_episode(0, base_url=endpoint.url, model="m", env={"base_url": "http://127.0.0.1:9", "timeout": 5})
        )
    assert (trajectory.reward, trajectory.stop, trajectory.outcome) == (None, "env_error", "env_error")
    assert script.requests == [] and trajectory.metrics["env_error"] == 1.0


def test_a_failing_endpoint_ends_the_episode_and_frees_the_session(agent, server):
    from orlgen.runtime.agent import EndpointError

    before = stats(server.url)
    with pytest.raises(EndpointError, match="the endpoint answered HTTP 404"):
        play(agent, server, _answering(404, {"error": "no such route"}))
    assert wait_for(lambda: stats(server.url)["deleted"] - before["deleted"] == 1)


def test_vllms_prompt_token_ids_reach_the_choice(agent, server):
    """vLLM, asked with `return_token_ids`, sends the prompt's token ids beside the choices; a
    token-level trainer (ART) reads them on the choice."""
    completion = {
        "prompt_token_ids": [1, 2, 3],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "token_ids": [4, 5]}],
    }
    trajectory = play(agent, server, _answering(200, completion), return_token_ids=True)
    assert trajectory.choices[1] == {**completion["choices"][0], "prompt_token_ids": [1, 2, 3]}


def _answering(status: int, payload: dict[str, Any]) -> str:
    """The URL of a loopback endpoint answering every POST with `status` and `payload`, for the
    test's life (a daemon thread)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Fixed(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    http = ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{http.server_address[1]}/v1"
