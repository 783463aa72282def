"""Server-sent events as ORS streams them (`/create_session`, `/{env}/call`), read with bounds.

A stream is lines: `event: <name>`, `data: <text>` (several are joined with newlines), `:`
comments (the server's `: ping` every 10 s while a tool runs) and a blank line that ends an
event. Read here chunk by chunk rather than line by line: aiohttp's `readline` refuses a line
over 128 KiB, and another ORS server may send a whole answer as one `data` line. Bounds: one
event's size (`max_event` bytes), and silence: no byte at all for `hang` seconds means the
server is hung (pings count as bytes, so a slow tool is not hung). Every byte and every line of an
event count towards its bounds, not only its `data` text.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from ..errors import OrlgenRuntimeError, ServerDead

HANG_VAR = "ORLGEN_HANG_SECONDS"  # the hang bound's variable, named in `Hung`'s message
MAX_EVENT = 16 * 1024 * 1024
# Lines in one event: each costs a pass of the parser's loop whatever its length (an empty `data:`
# line is 6 bytes), so bytes alone would let 16 MiB of them cost about 30 s of CPU. An ORS server
# sends an event in one or a few `data` lines (the SDK: 2 KB each); a million is far past any answer.
MAX_EVENT_LINES = 1024 * 1024


class Hung(ServerDead):
    """The server sent nothing (not even a ping) for the hang bound."""


class EventTooLarge(OrlgenRuntimeError):
    """One event of the stream exceeded its size bound."""


async def events(
    content: Any, hang: float, max_event: int = MAX_EVENT, max_lines: int = MAX_EVENT_LINES
) -> AsyncIterator[tuple[str, str]]:
    """`(event, data)` pairs from an aiohttp stream, until it ends; raises `Hung` after `hang`
    seconds without a byte and `EventTooLarge` past `max_event` bytes or `max_lines` lines in one
    event. Every byte and line since the last event counts (comments, empty `data:` lines, any
    field), and the `data` is kept as the bytes it arrived as, so what an event holds in memory is
    bounded by the bytes it took."""
    buffer = bytearray()
    event: str | None = None
    data = bytearray()  # the event's `data` values, each followed by a newline (the SSE data buffer)
    taken = lines = 0  # bytes and lines of the event so far
    while True:
        piece = await read_within(content, hang)
        if not piece:
            return
        buffer += piece
        start = 0
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[start:end]).rstrip(b"\r")
            taken, lines, start = taken + end + 1 - start, lines + 1, end + 1
            if not line:
                if event is not None:
                    yield event, data[:-1].decode("utf-8", "replace")
                event, data, taken, lines = None, bytearray(), 0, 0
                continue
            if lines > max_lines:
                raise EventTooLarge(f"a server event exceeds {max_lines} lines")
            if line.startswith(b":"):
                continue
            field, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if field == b"event":
                event = value.decode("utf-8", "replace")
            elif field == b"data":
                data += value + b"\n"
        del buffer[:start]
        if taken + len(buffer) > max_event:
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
        raise Hung(f"no byte from the server for {hang:g} s ({HANG_VAR})") from None
