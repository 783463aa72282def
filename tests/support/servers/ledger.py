"""A ledger of which session asked what of one server, for the replica tests (tests/test_replicas.py).

FAULT INJECTION's machinery without a fault: a small ASGI middleware (worn through `BothServer(kind,
middleware=("tests.support.servers.ledger:Ledger",))`) that records every request carrying an
`X-Session-ID`; the env and the server are untouched.
`GET /_stats` → `{"created": [session ids whose /create reached this server, in order],
"requests": {session id: requests of it here}, "calls": {session id: its /call requests here}}`.
"""

from __future__ import annotations

import threading

from tests.support.servers.asgi import answer


class Ledger:
    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.created: list[str] = []
        self.requests: dict[str, int] = {}
        self.calls: dict[str, int] = {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path == "/_stats":
            with self.lock:
                body = {"created": list(self.created), "requests": dict(self.requests), "calls": dict(self.calls)}
            return await answer(send, 200, body)
        sid = dict(scope["headers"]).get(b"x-session-id", b"").decode()
        if sid:
            with self.lock:
                if path.endswith("/create") and sid not in self.requests:
                    self.created.append(sid)
                self.requests[sid] = self.requests.get(sid, 0) + 1
                if path.rsplit("/", 1)[-1] == "call":
                    self.calls[sid] = self.calls.get(sid, 0) + 1
        return await self.app(scope, receive, send)
