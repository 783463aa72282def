"""What the fault-injection middlewares share: a JSON answer written straight to ASGI's `send`."""

from __future__ import annotations

import json


async def answer(send, status: int, body: dict, headers: list | None = None) -> None:
    """Answer `status` with `body` as JSON (and `headers`), as FastAPI would."""
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": data})
