"""FAULT INJECTION: small ASGI middlewares for the both-env's servers (`tests/support/servers/both.py`
wraps either SDK's app in those named by `ORLGEN_TEST_MIDDLEWARE`). The env and the servers are
untouched; each middleware plays one fault of a real deployment, the same on either server.

- `CutAfterTaskId`: a `/call` of `guess` that carries no `task_id` (a first attempt) gets its
  `task_id` event, then the connection is dropped, as a proxy or a flaky network drops a long
  stream. The tool runs on in the server; a retry carrying the `task_id` is served untouched.
  `GET /_cuts` answers `{"cut": N, "resumed": M}` (calls cut; calls that came back with a task_id).
- `StartingBackend`: the first two `/create`s answer `503` with `X-Backend-State: starting` and
  `Retry-After: 1`, as a hosted env whose backend is still booting does.
- `StatusOnCall`: a `/call` of `long` whose `size` is 402, 404, 410 or 422, or a `/create` whose
  `task_spec` has that `id`, answers that status (a `{"detail": ...}` body, as FastAPI writes):
  an unfunded account, a session the server no longer knows, one it has deleted, a request it
  cannot read.
"""

import json

from tests.support.servers.asgi import answer

REFUSALS = {
    402: "Payment required: add credits to your account",
    404: "Active environment not found",
    410: "Session deleted",
    422: "Unprocessable request",
}


async def _read_body(receive) -> bytes:
    body, more = b"", True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    return body


def _replay(body: bytes, receive):
    """A `receive` that hands the app the body already read, then the client's own messages (its
    disconnect, which the SSE response watches for)."""
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _call(scope, body: bytes) -> dict:
    """The tool call in a `/call` request's body, else {}."""
    if scope["type"] != "http" or not scope["path"].endswith("/call"):
        return {}
    try:
        return json.loads(body or b"{}")
    except ValueError:
        return {}


class _Cut(Exception):
    """Raised into the app to drop the connection after the `task_id` event."""


class CutAfterTaskId:
    def __init__(self, app) -> None:
        self.app = app
        self.counts = {"cut": 0, "resumed": 0}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == "/_cuts":
            return await answer(send, 200, self.counts)
        if scope["type"] != "http" or not scope["path"].endswith("/call"):
            return await self.app(scope, receive, send)
        body = await _read_body(receive)
        call = _call(scope, body)
        if call.get("name") != "guess" or call.get("task_id"):
            self.counts["resumed"] += bool(call.get("name") == "guess")
            return await self.app(scope, _replay(body, receive), send)
        self.counts["cut"] += 1

        async def cut_after_task_id(message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and b"event: task_id" in message.get("body", b""):
                raise _Cut

        try:
            await self.app(scope, _replay(body, receive), cut_after_task_id)
        except _Cut:
            pass  # the response is left unfinished: uvicorn drops the connection


class StartingBackend:
    def __init__(self, app) -> None:
        self.app = app
        self.refused = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"] == "/create" and self.refused < 2:
            self.refused += 1
            headers = [(b"x-backend-state", b"starting"), (b"retry-after", b"1")]
            return await answer(send, 503, {"detail": "backend starting"}, headers)
        return await self.app(scope, receive, send)


def _status_asked(path: str, body: dict) -> object:
    if path.endswith("/create"):
        return (body.get("task_spec") or {}).get("id")
    return (body.get("input") or {}).get("size") if body.get("name") == "long" else None


class StatusOnCall:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(("/call", "/create")):
            return await self.app(scope, receive, send)
        body = await _read_body(receive)
        status = _status_asked(scope["path"], json.loads(body or b"{}"))
        if status in REFUSALS:
            return await answer(send, status, {"detail": REFUSALS[status]})
        return await self.app(scope, _replay(body, receive), send)
