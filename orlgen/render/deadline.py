"""An overall deadline for rendering, so a small hostile edit cannot stall CI.

`check` and `generate` render every module under one deadline (`ORLGEN_RENDER_DEADLINE`
seconds, default `DEFAULT_SECONDS`; the environment, not the repository, sets it). When it
passes, the render stops with one line. It is a real-time timer signal, so it interrupts
pure-Python loops anywhere; the timer repeats, so a library that swallows the first exception
gets another one. Signals can only be set in the main thread: elsewhere there is no deadline.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from orlgen.errors import OrlgenError

DEFAULT_SECONDS = 300.0
_REPEAT = 0.25


class DeadlineExceeded(OrlgenError):
    """Rendering took longer than the deadline."""


def seconds() -> float:
    """The deadline from `ORLGEN_RENDER_DEADLINE`; a value that is not a positive number is an error."""
    raw = os.environ.get("ORLGEN_RENDER_DEADLINE", "")
    if not raw:
        return DEFAULT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise DeadlineExceeded(f"ORLGEN_RENDER_DEADLINE={raw[:40]!r}: expected a positive number of seconds")
    return value


@contextmanager
def render_deadline(what: str) -> Iterator[None]:
    """Raise `DeadlineExceeded` naming `what` if the block runs past the deadline."""
    limit = seconds()
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise DeadlineExceeded(
            f"{what}: rendering took longer than {limit:g} s (ORLGEN_RENDER_DEADLINE); a snapshot or template "
            "makes it too slow"
        )

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, limit, _REPEAT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
