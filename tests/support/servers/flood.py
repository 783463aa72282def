"""`python -m tests.support.servers.flood module:Env PORT`: a real ORS server whose `/create_session`
stream is FAULT INJECTION: an ASGI middleware answers it with `ORLGEN_FLOOD_EVENTS` session
events of 400 KB each (four 100 KB data lines: every line within aiohttp's per-line limit),
then the end event. Every other request reaches the SDK's own app. The SDK's client keeps each
event's data until the stream ends, so only a bound on the whole stream keeps memory flat."""

from __future__ import annotations

import os
import sys

import openreward.environments

LINE = b"data: " + b"x" * 100_000 + b"\n"
EVENT = b"event: chunk\n" + LINE * 4 + b"\n"


class FloodSessionEvents:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != "/create_session":
            return await self.app(scope, receive, send)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for _ in range(int(os.environ.get("ORLGEN_FLOOD_EVENTS", "150"))):
            await send({"type": "http.response.body", "body": EVENT, "more_body": True})
        await send({"type": "http.response.body", "body": b"event: end\ndata: \n\n", "more_body": False})


class FloodingServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(FloodSessionEvents)


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = FloodingServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
