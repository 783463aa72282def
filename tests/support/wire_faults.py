"""`python -m tests.support.wire_faults module:Env PORT`: a real ORS server (the SDK's) with wire
faults for tests/test_ors_client.py. FAULT INJECTION: a small ASGI middleware on the SDK's app;
the env and the server are untouched. A fault is armed by `POST /_fault/<what>?n=N` and applies
to the next N requests it concerns:
- `cut`: a `/call` stream is closed right after its first event (`task_id`), cleanly, as a proxy
  that drops a long response does.
- `status?code=C&n=N`: the next N `/call` requests answer C (`detail` "injected C"); for 503 with
  `X-Backend-State: starting` and `Retry-After: 1`, as the platform's proxy says of a backend
  that is still starting.
`GET /_stats` → `{"calls": <call requests that reached the middleware>}`.
"""

from __future__ import annotations

import sys
import urllib.parse

import openreward.environments

from tests.support.servers.asgi import answer


class WireFaults:
    def __init__(self, app) -> None:
        self.app = app
        self.cuts = 0
        self.status: tuple[int, int] = (0, 0)  # (code, requests left)
        self.calls = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path == "/_stats":
            return await answer(send, 200, {"calls": self.calls})
        if path.startswith("/_fault/"):
            query = dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
            n = int(query.get("n", 1))
            if path == "/_fault/cut":
                self.cuts = n
            else:
                self.status = (int(query["code"]), n)
            return await answer(send, 200, {})
        if not path.endswith("/call"):
            return await self.app(scope, receive, send)
        self.calls += 1
        code, left = self.status
        if left:
            self.status = (code, left - 1)
            extra = [(b"x-backend-state", b"starting"), (b"retry-after", b"1")] if code == 503 else []
            return await answer(send, code, {"detail": f"injected {code}"}, extra)
        if self.cuts:
            self.cuts -= 1
            return await self.app(scope, receive, _cut_after_first_event(send))
        return await self.app(scope, receive, send)


def _cut_after_first_event(send):
    """A `send` that ends the response after the first body message, and drops the rest."""
    done = False

    async def cut(message) -> None:
        nonlocal done
        if done:
            return
        if message["type"] == "http.response.body" and message.get("body"):
            await send({**message, "more_body": False})
            done = True
            return
        await send(message)

    return cut


class FaultyServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(WireFaults)


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = FaultyServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
