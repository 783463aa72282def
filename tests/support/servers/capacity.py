"""`python -m tests.support.servers.capacity module:Env PORT`: an ORS server with the faults of a hosted
env, for the budget, back-off and breaker tests. Fault injection: a small ASGI middleware on the
SDK server's app; the env and the SDK's server are untouched.

Each fault is switched on by a control request (`POST /_fault/<what>`), so one server serves a
whole test module:
- `capacity?n=N[&retry_after=S]`: at most N sessions open at once, keyed by `X-Session-ID` from their
  `/create` to their `/delete`; beyond that `/create` answers 429 with `Retry-After: S` (1 unless
  given), as a hosted env at
  its concurrency limit does. Counts what it refused (`refused`), the sessions it refused at least
  once (`refused_asks`: a client's own retries of one `/create` share its session id; a new ask
  is a new session) and the most ever open (`max_open`).
- `payment`: every request answers 402, as for an unfunded platform account.
- `down`: every request answers 500 (a flapping env).
- `clear`: no fault, no limit, every count back to zero.
`GET /_stats`: `{"refused", "refused_asks", "max_open", "open", "created", "deleted", "requests", "calls"}` as
JSON; `requests` counts the requests that reached the middleware apart from the control paths,
`calls` those to an env's `/call` (tool calls).
"""

from __future__ import annotations

import json
import sys
import threading
import urllib.request

from tests.support.servers.asgi import answer


class Faults:
    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.open: set[str] = set()
        self._clear()

    def _clear(self) -> None:
        self.capacity: int | None = None
        self.retry_after = b"1"
        self.payment = self.down = False
        self.stats = {"refused": 0, "max_open": 0, "created": 0, "deleted": 0, "requests": 0, "calls": 0}
        self.refused: set[str] = set()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path == "/_stats":
            with self.lock:
                return await answer(
                    send, 200, {**self.stats, "open": len(self.open), "refused_asks": len(self.refused)}
                )
        if path.startswith("/_fault/"):
            return await answer(send, 200, self._switch(path.removeprefix("/_fault/"), scope["query_string"]))
        with self.lock:
            self.stats["requests"] += 1
            self.stats["calls"] += path.rsplit("/", 1)[-1] == "call"
        if self.payment:
            return await answer(send, 402, {"detail": "Payment required: add credits to your account"})
        if self.down:
            return await answer(send, 500, {"detail": "the environment is down"})
        sid = dict(scope["headers"]).get(b"x-session-id", b"").decode()
        if path == "/create" and not self._admit(sid):
            return await answer(send, 429, {"detail": "at capacity"}, [(b"retry-after", self.retry_after)])
        if path == "/delete":
            with self.lock:
                if sid in self.open:
                    self.open.discard(sid)
                    self.stats["deleted"] += 1
        return await self.app(scope, receive, send)

    def _switch(self, what: str, query: bytes) -> dict:
        with self.lock:
            if what == "clear":
                self._clear()
            elif what == "capacity":
                options = dict(part.split("=", 1) for part in query.decode().split("&"))
                self.capacity = int(options["n"])
                self.retry_after = options.get("retry_after", "1").encode()
            elif what in ("payment", "down"):
                setattr(self, what, True)
            elif what == "up":
                self.down = False
            return {"capacity": self.capacity, "payment": self.payment, "down": self.down}

    def _admit(self, sid: str) -> bool:
        with self.lock:
            if self.capacity is not None and sid not in self.open and len(self.open) >= self.capacity:
                self.stats["refused"] += 1
                self.refused.add(sid)
                return False
            if sid not in self.open:
                self.open.add(sid)
                self.stats["created"] += 1
                self.stats["max_open"] = max(self.stats["max_open"], len(self.open))
            return True


def stats(url: str) -> dict:
    """The server's counts (from a test)."""
    with urllib.request.urlopen(f"{url}/_stats", timeout=10) as response:
        return json.loads(response.read())


def post(url: str, path: str) -> None:
    """A control request, e.g. `post(url, "/_fault/down")`."""
    urllib.request.urlopen(urllib.request.Request(f"{url}{path}", method="POST"), timeout=10).close()


def install() -> None:
    """Make every SDK `Server` built in this process wear the middleware."""
    import openreward.environments as environments

    class FaultyServer(environments.Server):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.app.add_middleware(Faults)

    environments.Server = FaultyServer


if __name__ == "__main__":
    install()
    from orlgen.serve import main

    main(sys.argv[1:])
