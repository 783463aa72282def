"""Environments as the benchmark serves them: real ORS servers that count the HTTP requests
they receive. Imported only by server child processes (`ServerProcess("bench.served:Helpdesk")`).

`orlgen.serve.serving` builds `openreward.environments.Server(...).app` and hands it to uvicorn.
Importing this module (which `ServerProcess` does before `serving` runs) replaces
`openreward.environments.Server` *in the child process* with a subclass whose app is wrapped in
`_Counting`, an outermost ASGI layer that counts every HTTP request by method and path (so a
308 redirect and the request it leads to count as two) and answers two extra routes itself:

- `GET  /__bench__/requests` → `{"total": n, "connections": c, "by_path": {"POST /helpdesk/task": k, ...}}`
  (`connections`: distinct client ports, i.e. TCP connections opened since the last reset)
- `POST /__bench__/reset`    → zeroes the counts.

The bench routes are not counted. Nothing in orlgen or the SDK is changed; only this process's
server class is.

Served sockets use TCP_NODELAY here, as `uvicorn.run(app, host, port)`
(and so `Server.run()`) gets by default. `orlgen.serve.serving` binds its own socket with
`socket.socket(AF_INET, SOCK_STREAM)`, whose `proto` is 0; asyncio sets TCP_NODELAY on accepted
connections only when `sock.proto == IPPROTO_TCP`, so without this every response written in two
pieces (headers, then body) waits for the client's delayed ACK: about 40 ms per request on Linux
loopback. The bench measures both: headline numbers with TCP_NODELAY (a production-like server),
and, through `bench.stalled` (which undoes the change), the per-call cost as `orlgen.serve`
serves today.

Environments: the repo's `Echo` and `Helpdesk` (same classes, same env keys), and `Bulk`, a
synthetic environment with 20,000 tasks whose `list_tasks` is cheap (built once, cached).
"""

from __future__ import annotations

import asyncio.base_events
import functools
import json
import socket
from collections import Counter
from typing import Any

import openreward.environments as _ore
from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

from examples.echo import Echo
from examples.helpdesk import Helpdesk

__all__ = ["Bulk", "Echo", "Helpdesk"]

BENCH_PREFIX = "/__bench__/"


class _Counting:
    """ASGI wrapper: counts HTTP requests, serves the bench routes."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.counts: Counter[str] = Counter()
        self.connections: set[tuple[str, int]] = set()  # client (host, port): one per TCP connection

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = scope.get("path", "")
            if path.startswith(BENCH_PREFIX):
                await self._bench_route(path[len(BENCH_PREFIX) :], send)
                return
            self.counts[f"{scope.get('method', '')} {path}"] += 1
            if scope.get("client"):
                self.connections.add(tuple(scope["client"]))
        await self.app(scope, receive, send)

    async def _bench_route(self, route: str, send: Any) -> None:
        if route == "reset":
            self.counts.clear()
            self.connections.clear()
            body: Any = {"ok": True}
        elif route == "requests":
            body = {
                "total": sum(self.counts.values()),
                "connections": len(self.connections),
                "by_path": dict(sorted(self.counts.items())),
            }
        else:
            body = {"error": f"unknown bench route {route!r}"}
        data = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": data})


class _CountingServer(_ore.Server):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.app = _Counting(self.app)


_ore.Server = _CountingServer  # read by orlgen.serve.serving at call time, after this import


def _set_nodelay(sock: socket.socket) -> None:
    """asyncio's `_set_nodelay` without its `sock.proto == IPPROTO_TCP` condition."""
    if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


ORIGINAL_SET_NODELAY = asyncio.base_events._set_nodelay
asyncio.base_events._set_nodelay = _set_nodelay  # looked up by each new selector transport


# ── Bulk: 20,000 tasks ──────────────────────────────────────────────────────────────────

BULK_TASKS = 20_000
_TOPICS = ["billing", "shipping", "returns", "accounts", "warranty", "hardware", "software", "security"]


@functools.cache
def _bulk_tasks(split: str) -> tuple[dict[str, Any], ...]:
    """Cheap, deterministic, about 300 bytes of JSON per task (nested object, list, nullable)."""
    tasks = []
    for i in range(BULK_TASKS):
        topic = _TOPICS[i % len(_TOPICS)]
        tasks.append(
            {
                "id": f"{split}-{i:05d}",
                "question": f"Ticket {i}: the customer asks about {topic}; find the answer code in the knowledge base.",
                "answer": f"ANS-{(i * 7919) % 100000:05d}",
                "difficulty": ("easy", "medium", "hard")[i % 3],
                "topic": topic,
                "tags": [topic, f"batch-{i // 1000}"],
                "limits": {"max_turns": 4 + i % 5, "budget": round(0.5 + (i % 10) / 10, 2)},
                "note": None if i % 4 else f"VIP customer #{i}",
            }
        )
    return tuple(tasks)


class AnswerParams(BaseModel):
    code: str = Field(min_length=1, description="The answer code, e.g. 'ANS-00042'.")


class LookupParams(BaseModel):
    topic: str = Field(description="A knowledge-base topic.")
    limit: int = Field(5, ge=1, le=20, description="Maximum number of articles.")


class Bulk(Environment):
    """A large synthetic environment: 20,000 tasks in one split."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return list(_bulk_tasks(split))

    def get_prompt(self):
        return [TextBlock(text=self.task_spec["question"])]

    @tool
    def lookup(self, params: LookupParams) -> ToolOutput:
        """Search the knowledge base by topic."""
        return ToolOutput(blocks=[TextBlock(text=f"{params.limit} articles about {params.topic}")])

    @tool
    def answer(self, params: AnswerParams) -> ToolOutput:
        """Submit the answer code; ends the episode."""
        won = params.code == self.task_spec["answer"]
        return ToolOutput(blocks=[TextBlock(text="correct" if won else "wrong")], reward=float(won), finished=True)
