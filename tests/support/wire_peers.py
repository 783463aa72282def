"""ASGI middlewares for counting the TCP connections of either ORS server
(`tests/support/servers/both.py` wraps the app in those named in `ORLGEN_TEST_MIDDLEWARE`).

- `CountPeers` observes and changes nothing: each request's client address (host and port)
  names the TCP connection it came over, so the distinct addresses seen are the connections the
  client opened. `GET /_peers` answers `{"requests": N, "new_connections": M, "late": L}`: the
  requests, and the connections never seen before, since the last `POST /_peers/reset` (neither
  counted); `late` is how many streams `LateEnd` holds now.
- FAULT INJECTION, `LateEnd`: a stream's body ends (its last, empty message: the chunked
  terminator) `ORLGEN_WIRE_LATE_END` seconds after its last event, as from a server (or through a
  client loop) too busy to get to it at once. The events themselves are untouched.
"""

from __future__ import annotations

import asyncio
import os

from tests.support.servers.asgi import answer

ROUTE = "/_peers"
LATE_VAR = "ORLGEN_WIRE_LATE_END"
late_ends = 0  # streams whose terminator `LateEnd` is holding now (one server process)


class CountPeers:
    def __init__(self, app):
        self.app = app
        self.requests = self.new_connections = 0
        self.peers: set[tuple[str, int]] = set()  # every connection seen, resets or not

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] == ROUTE + "/reset":
            self.requests = self.new_connections = 0
            return await answer(send, 200, {})
        if scope["path"] == ROUTE:
            counts = {"requests": self.requests, "new_connections": self.new_connections, "late": late_ends}
            return await answer(send, 200, counts)
        self.requests += 1
        peer = tuple(scope["client"])
        self.new_connections += peer not in self.peers
        self.peers.add(peer)
        return await self.app(scope, receive, send)


class LateEnd:
    def __init__(self, app):
        self.app = app
        self.late = float(os.environ.get(LATE_VAR) or 0)

    async def __call__(self, scope, receive, send):
        streaming = False

        async def late_send(message):
            global late_ends
            nonlocal streaming
            if message["type"] == "http.response.start":
                streaming = any(
                    k == b"content-type" and v.startswith(b"text/event-stream") for k, v in message["headers"]
                )
            elif streaming and message["type"] == "http.response.body" and not message.get("more_body"):
                late_ends += 1
                try:
                    await asyncio.sleep(self.late)
                finally:
                    late_ends -= 1
            await send(message)

        return await self.app(scope, receive, late_send if scope["type"] == "http" else send)
