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

Environments: the repo's `Echo` and `Helpdesk` (same classes, same env keys), and `Bulk`
(`bench.bulk_env`: 20,000 tasks, a cheap `list_tasks`).
"""

from __future__ import annotations

import asyncio.base_events
import json
import socket
from collections import Counter
from typing import Any

import openreward.environments as _ore

from bench.bulk_env import Bulk
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
