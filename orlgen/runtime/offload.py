"""An `Episode`'s blocking calls from async code: the shims whose trainer drives episodes as
asyncio tasks (the agent loop, verl's agent loops) run them on a thread pool, so one event loop
plays many episodes at once. `Episode` itself stays synchronous: its requests already run on the
runtime's own loop thread (`orlgen.runtime.session.connection`), and TRL calls it from threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

from . import process
from .episode import Episode

T = TypeVar("T")

# Threads for episodes' blocking calls: each waits on a request, so many are cheap; a trainer
# playing a few hundred episodes at once should not queue behind a CPU-sized pool.
EPISODE_THREADS = 256


async def blocking(episode: Episode, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` (a method of `episode`) on the pool. Cancelled while it runs, the call goes
    on to its end (a request cannot be taken back), then the episode's session is deleted."""
    future = _pool().submit(call, *args)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.add_done_callback(lambda _: episode.close(wait=False))
        raise


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    with _pool_lock:
        if not _pools:
            _pools.append(concurrent.futures.ThreadPoolExecutor(EPISODE_THREADS, thread_name_prefix="orlgen-episode"))
        return _pools[0]


_pool_lock = process.lock()
_pools: list[concurrent.futures.ThreadPoolExecutor] = process.per_process([])  # a child makes its own
