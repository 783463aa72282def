"""A loopback OpenAI-compatible chat-completions server (starlette + uvicorn) serving a scripted
policy, for `orlgen eval` in the tests and the eval bench (`bench.eval_throughput`).

`POST /v1/chat/completions` answers `{"choices": [{"message": ...}]}` with what the policy returns
for the request body; `GET /v1/models` lists the one model. Every request body is kept, so a test
can check what the model was shown. Policies answer in `tool_calls` with JSON-text arguments, as
OpenAI does (`call`, `answer`). A policy may raise `Refuse(status)` to answer with an HTTP error
(fault injection, said so).
"""

from __future__ import annotations

import json
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


def turn_of(body: dict[str, Any]) -> int:
    """The model turn a request asks for: 0 for the first."""
    return sum(message["role"] == "assistant" for message in body["messages"])


def call(name: str, arguments: dict[str, Any] | str, turn: int) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": text}}],
    }


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.chat_server module:policy`: serve a policy in its own process (as a real
    endpoint is), print the URL on one line, serve until stdin closes."""
    import importlib
    import sys

    module, _, name = (argv if argv is not None else sys.argv[1:])[0].partition(":")
    policy = getattr(importlib.import_module(module), name)
    with serving(ChatServer(policy)) as server:
        print(server.url, flush=True)
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
