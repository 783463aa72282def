"""A loopback OpenAI-compatible chat-completions server (starlette + uvicorn), serving a policy
that tests script, for `orlgen eval`.

`POST /v1/chat/completions` answers `{"choices": [{"message": ...}]}` with what the policy returns
for the request body; `GET /v1/models` lists the one model. Every request body is kept, so a test
can check what the model was shown. The scripted policy plays the example environments the way a
model that knows them would, with per-rollout slips chosen by the request's seed, so rewards vary
across a GRPO group; it answers in `tool_calls` with JSON-text arguments, as OpenAI does.
A policy may raise `Refuse(status)` to answer with an HTTP error (fault injection, said so).
"""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Policy = Callable[[dict[str, Any]], dict[str, Any]]


class Refuse(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class ChatServer:
    def __init__(self, policy: Policy, *, delay: float = 0.0) -> None:
        self.policy = policy
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def completions(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            try:
                message = await run_in_threadpool(self._answer, body)
            except Refuse as refused:
                return JSONResponse({"error": {"message": "refused by the test"}}, status_code=refused.status)
            return JSONResponse(
                {
                    "object": "chat.completion",
                    "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
            )

        async def models(request: Request) -> JSONResponse:
            return JSONResponse({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

        return Starlette(
            routes=[Route("/v1/chat/completions", completions, methods=["POST"]), Route("/v1/models", models)]
        )

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.delay:
            time.sleep(self.delay)
        return self.policy(body)


@contextmanager
def serving(server: ChatServer) -> Iterator[ChatServer]:
    """Run `server` on a free loopback port (uvicorn on a thread); `server.url` ends in `/v1`."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(server.app(), log_level="warning", lifespan="off")
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the chat server did not start")
        time.sleep(0.01)
    server.url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    try:
        yield server
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
        sock.close()


# --- the scripted policy ----------------------------------------------------------------------


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    """Plays whichever example env the request's tools belong to."""
    tools = {tool["function"]["name"] for tool in body.get("tools") or ()}
    messages = body["messages"]
    turn = sum(message["role"] == "assistant" for message in messages)
    rollout = random.Random(int(body.get("seed", 0)) - turn)  # one draw per rollout, whatever the turn
    prompt = next(message["content"] for message in messages if message["role"] == "user")
    if "submit_resolution" in tools:
        return _helpdesk(prompt, turn, rollout)
    if "lookup" in tools:
        return _quiz(prompt, turn, rollout)
    if "run" in tools:
        return call("run", {"command": f"step {turn}"}, turn) if turn < 3 else answer("done")
    if "step" in tools:
        return call("step", {}, turn) if turn == 0 else answer("done")
    if "echo" in tools:
        target = re.search(r"with the text '(.*)'\.", prompt)
        return call("echo", {"text": target.group(1) if target else ""}, turn) if turn == 0 else answer("done")
    return answer("I cannot help with that.")


def call(name: str, arguments: dict[str, Any] | str, turn: int) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": text}}],
    }


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


_TICKETS: dict[str, dict[str, Any]] = {}


def _helpdesk(prompt: str, turn: int, rollout: random.Random) -> dict[str, Any]:
    """The perfect solution, except that a third of rollouts skip the action step and one in
    ten opens with a malformed call (a tool error)."""
    from examples.helpdesk import _tasks, scripted_solution

    if not _TICKETS:
        _TICKETS.update({task["ticket_id"]: task for split in ("train", "test") for task in _tasks(split)})
    ticket = re.search(r"Support ticket (\S+)", prompt)
    spec = _TICKETS[ticket.group(1)]
    steps = scripted_solution(spec)
    draw = rollout.random()
    if draw < 0.35 and len(steps) > 2:
        steps = [step for step in steps if step[0] not in ("issue_refund", "update_shipping", "cancel_order")]
    if draw > 0.9:
        steps = [("get_order", "{not json"), *steps]
    if turn >= len(steps):
        return answer("The ticket is resolved.")
    name, arguments = steps[turn]
    return call(name, arguments, turn)


def _quiz(prompt: str, turn: int, rollout: random.Random) -> dict[str, Any]:
    """Looks the topic up, then answers right in about two rollouts of three."""
    from examples.quiz import QUESTIONS

    question = next(q for q in QUESTIONS if q["question"] in prompt)
    if turn == 0:
        return call("lookup", {"topic": question["topic"]}, turn)
    return answer(f"The answer is {question['answer']}." if rollout.random() < 0.67 else "I am not sure.")
