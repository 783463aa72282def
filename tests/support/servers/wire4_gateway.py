"""FAULT INJECTION: a gateway that forwards a request and loses the reply, as a proxy answering
`502 Bad Gateway` after the upstream already ran the request does. For the both-env's servers
(`tests/support/servers/both.py`, `ORLGEN_TEST_MIDDLEWARE`); the env and the servers are untouched.

`ForwardThen502`: a `/create` of an ad-hoc task whose spec says `"gateway": 502`, and a `/call` of
`guess` that carries no `task_id`, reach the app,
which runs them to the end (the session is created, the tool runs); the app's reply is dropped and
the client gets `502` instead. Everything else passes untouched. `GET /_gateway` answers
`{"open": N, "lost": M}`: sessions the app created (its `/create` answered 2xx) and has not deleted
(its `/delete` answered 2xx), and replies replaced by a 502.
"""

from __future__ import annotations

import json

from tests.support.servers.asgi import answer
from tests.support.servers.faults import _read_body, _replay


class ForwardThen502:
    def __init__(self, app) -> None:
        self.app = app
        self.open: set[str] = set()
        self.lost = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["path"] == "/_gateway":
            return await answer(send, 200, {"open": len(self.open), "lost": self.lost})
        sid = dict(scope["headers"]).get(b"x-session-id", b"").decode()
        body = await _read_body(receive)
        status, replies = await self._forward(scope, _replay(body, receive))
        if scope["path"] == "/create" and status < 300:
            self.open.add(sid)
        if scope["path"] == "/delete" and status < 300:
            self.open.discard(sid)
        if _loses_reply(scope["path"], body):
            self.lost += 1
            return await answer(send, 502, {"detail": "Bad Gateway"})
        for message in replies:
            await send(message)

    async def _forward(self, scope, receive) -> tuple[int, list[dict]]:
        """The app's whole reply to the request (its status and messages), run to its end."""
        replies: list[dict] = []

        async def keep(message) -> None:
            replies.append(message)

        await self.app(scope, receive, keep)
        status = next((m["status"] for m in replies if m["type"] == "http.response.start"), 500)
        return status, replies


def _loses_reply(path: str, body: bytes) -> bool:
    if not path.endswith(("/create", "/call")):
        return False
    try:
        request = json.loads(body or b"{}")
    except ValueError:
        return False
    if path == "/create":
        return (request.get("task_spec") or {}).get("gateway") == 502
    return request.get("name") == "guess" and not request.get("task_id")
