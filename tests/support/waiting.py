"""Waiting on what another process does (a server's teardown, a child's exit), bounded."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_for(predicate: Callable[[], object], seconds: float = 10.0) -> bool:
    """True once `predicate()` is, looking every 50 ms for at most `seconds`; its last answer else.
    A server answers `/delete` before its env's teardown has run, so what the env records about
    it lags behind the answer, by seconds on a busy machine."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def process_state(pid: int) -> str | None:
    """Process `pid`'s state letter from /proc (`T` stopped, `Z` a zombie), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None
