"""Server-sent events as ORS streams them (`/create_session`, `/{env}/call`), read with bounds.

A stream is lines: `event: <name>`, `data: <text>` (several are joined with newlines), `:`
comments (the server's `: ping` every 10 s while a tool runs) and a blank line that ends an
event. Read here chunk by chunk rather than line by line: aiohttp's `readline` refuses a line
over 128 KiB, and another ORS server may send a whole answer as one `data` line. Bounds: one
event's size (`max_event` bytes), and silence: no byte at all for `hang` seconds means the
server is hung (pings count as bytes, so a slow tool is not hung).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from .errors import OrlgenRuntimeError, ServerDead

MAX_EVENT = 16 * 1024 * 1024


class Hung(ServerDead):
    """The server sent nothing (not even a ping) for the hang bound."""


class EventTooLarge(OrlgenRuntimeError):
    """One event of the stream exceeded its size bound."""


async def events(content: Any, hang: float, max_event: int = MAX_EVENT) -> AsyncIterator[tuple[str, str]]:
    """`(event, data)` pairs from an aiohttp stream, until it ends; raises `Hung` after `hang`
    seconds without a byte and `EventTooLarge` past `max_event` bytes in one event."""
    buffer = bytearray()
    event: str | None = None
    data: list[str] = []
    held = 0
    while True:
        piece = await read_within(content, hang)
        if not piece:
            return
        buffer += piece
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end]).rstrip(b"\r").decode("utf-8", "replace")
            start = end + 1
            if not line:
                if event is not None:
                    yield event, "\n".join(data)
                event, data, held = None, [], 0
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
                held += len(value)
        del buffer[:start]
        if held + len(buffer) > max_event:
            raise EventTooLarge(f"a server event exceeds {max_event} bytes")


async def read_within(content: Any, hang: float) -> bytes:
    """The stream's next bytes (b"" at its end), `Hung` after `hang` seconds without any. Bounded
    by a timer (`asyncio.timeout`), not `asyncio.wait_for`, which on Python 3.11 wraps every read
    in a task of its own: a cost paid on every piece of every call's stream."""
    try:
        async with asyncio.timeout(hang):
            piece: bytes = await content.readany()
            return piece
    except TimeoutError:
        raise Hung(f"no byte from the server for {hang:g} s") from None
