"""Opt-in session prefetch for GRPOTrainer's serial `reset` (`EnvAdapter(prefetch=n)`).

GRPOTrainer resets the same task `num_generations` times in a row, one rollout after another, so
on an environment whose sessions take seconds to open (a sandbox starting) a batch waits for
the sum of its setups. With `prefetch=n`, the first `reset` of a task opens `n` sessions for it
together and keeps the `n - 1` it does not use; the next resets of that task take one each. When
a reset asks for another task, the sessions left for the previous one are deleted unused: that
is the cost, up to `n - 1` extra sessions whenever a group is cut short (the dataset's last
group, or rows not in groups). Measured in `bench` scenario 8: about 2× less env-time per
serial batch at 1 s setup, 200 ms tools. Off by default, and not for AsyncGRPOTrainer, which
already opens its rollouts' sessions concurrently.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

Key = tuple[Any, ...]  # (connection, split, index, secrets): sessions are interchangeable only within a key

_lock = threading.Lock()
_pool: dict[Key, list[Any]] = {}  # sessions opened ahead, by task


def take(key: Key) -> Any | None:
    """A session opened ahead for exactly this task, if one is left."""
    with _lock:
        sessions = _pool.get(key)
        if sessions:
            return sessions.pop()
    return None


def stale(connection: Any, keep: Key) -> list[Any]:
    """Remove and return the sessions kept for other tasks of `connection`: their group is over."""
    with _lock:
        dropped = [key for key in _pool if key[0] == connection and key != keep]
        return [session for key in dropped for session in _pool.pop(key)]


def drain() -> list[tuple[Any, Any]]:
    """Every session still kept, with its connection (at exit)."""
    with _lock:
        sessions = [(key[0], session) for key, kept in _pool.items() for session in kept]
        _pool.clear()
    return sessions


async def open_group(open_one: Callable[[], Awaitable[Any]], count: int) -> tuple[Any, list[Any]]:
    """Open `count` sessions together: the first success for the caller, the rest to keep.
    Raises the first failure when none opened."""
    results = await asyncio.gather(*(open_one() for _ in range(count)), return_exceptions=True)
    opened = [result for result in results if not isinstance(result, BaseException)]
    if not opened:
        raise next(result for result in results if isinstance(result, BaseException))
    return opened[0], opened[1:]


def keep(key: Key, sessions: list[Any]) -> None:
    if sessions:
        with _lock:
            _pool.setdefault(key, []).extend(sessions)
