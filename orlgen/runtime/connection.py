"""How orlgen reaches an environment: the async `openreward` SDK on one event-loop thread per
process, every call bounded by a timeout.

The SDK's synchronous wrappers wait forever (`future.result()` without a timeout) and a dead
server takes them 15-20 s to give up; running the async SDK on our own loop lets every call
have a bound, and a bound that expires leaves the loop free for the next rollout.

`openreward` is imported lazily, on the first session or live fetch: it costs about two seconds
and training scripts import generated modules at start-up.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from .errors import OrlgenRuntimeError

T = TypeVar("T")


class ConfigError(OrlgenRuntimeError):
    """Generated code does not know where its environment is."""


class CallTimeout(OrlgenRuntimeError):
    """An SDK call did not finish within its bound."""


@dataclass(frozen=True)
class Target:
    """Where the snapshot was captured: mirrors `orlgen.snapshot.Target`, without importing it."""

    kind: Literal["catalog", "url", "module"]
    value: str
    env: str


@dataclass(frozen=True)
class Connection:
    """A resolved address: a URL of a single-host server, or a catalog name on the platform."""

    url: str | None
    catalog: str | None
    env: str
    api_key: str | None

    @classmethod
    def resolve(cls, target: Target, env_var: str, base_url: str | None, api_key: str | None) -> Connection:
        """Explicit `base_url` first, then the `env_var` environment variable, then the snapshot's target."""
        url = base_url or os.environ.get(env_var)
        if url:
            return cls(url=url.rstrip("/"), catalog=None, env=target.env, api_key=api_key)
        if target.kind == "url":
            return cls(url=target.value, catalog=None, env=target.env, api_key=api_key)
        if target.kind == "catalog":
            return cls(url=None, catalog=target.value, env=target.env, api_key=api_key)
        raise ConfigError(
            f"the snapshot was captured from {target.value!r}, which has no address: "
            f"pass base_url= or set {env_var}"
        )

    def __repr__(self) -> str:  # never show the API key
        return f"Connection({self.url or self.catalog!r}, env={self.env!r})"

    def run(self, call: Callable[[Any], Awaitable[T]], timeout: float | None) -> T:
        """`await call(environment)` on the SDK's loop, waiting at most `timeout` seconds."""

        async def with_environment() -> T:
            return await call(await _environment(self))

        return _sdk_loop().run(with_environment(), timeout)

    def run_nowait(self, call: Callable[[Any], Awaitable[Any]]) -> None:
        """Start `call(environment)` on the SDK's loop without waiting (for finalizers)."""

        async def with_environment() -> None:
            try:
                await call(await _environment(self))
            except Exception:  # noqa: BLE001 - best effort; nobody is waiting
                pass

        _sdk_loop().submit(with_environment())


class _Loop:
    """An event loop on a daemon thread, owned by one process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="orlgen-sdk", daemon=True)
        self.thread.start()
        self.environments: dict[Connection, Any] = {}
        self.clients: list[Any] = []  # SDK clients, closed at exit
        self.pending: set[concurrent.futures.Future[Any]] = set()  # background work, awaited at exit

    def run(self, coro: Awaitable[T], timeout: float | None) -> T:
        if threading.current_thread() is self.thread:
            raise RuntimeError("orlgen cannot wait for the SDK from the SDK's own thread")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise CallTimeout(f"no answer within {timeout:g} s") from None

    def submit(self, coro: Awaitable[Any]) -> None:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self.pending.add(future)
        future.add_done_callback(self.pending.discard)


_lock = threading.Lock()
_loops: dict[int, _Loop] = {}
_exit_hooks: list[Callable[[], None]] = []


def _sdk_loop() -> _Loop:
    # Keyed by pid: a forked child builds its own loop thread, never the parent's.
    with _lock:
        loop = _loops.get(os.getpid())
        if loop is None:
            loop = _loops[os.getpid()] = _Loop()
    return loop


async def _environment(connection: Connection) -> Any:
    """The SDK's environment handle for `connection`, made once per process on the loop."""
    cached = _sdk_loop().environments
    if connection not in cached:
        from openreward import AsyncOpenReward

        if connection.url is not None:
            client = AsyncOpenReward(api_key=connection.api_key, base_url=connection.url)
            handle = client.environments.get(connection.env, variant=connection.env, base_url=connection.url)
        else:
            client = AsyncOpenReward(api_key=connection.api_key or os.environ.get("OPENREWARD_API_KEY"))
            handle = client.environments.get(connection.catalog)
        _sdk_loop().clients.append(client)
        cached[connection] = handle
    return cached[connection]


def on_exit(hook: Callable[[], None]) -> None:
    """Run `hook` at interpreter exit, while the SDK's loop still runs."""
    _exit_hooks.append(hook)


@atexit.register
def _run_exit_hooks() -> None:
    while _exit_hooks:
        hook = _exit_hooks.pop()
        try:
            hook()
        except Exception:  # noqa: BLE001 - exit is best effort; the server reaps what we miss
            pass
    loop = _loops.get(os.getpid())
    if loop is None:
        return
    concurrent.futures.wait(list(loop.pending), timeout=5.0)  # sessions being deleted

    async def close_clients() -> None:
        # Together: each `aclose` sleeps 0.25 s for aiohttp's graceful shutdown.
        await asyncio.gather(*(client.environments.aclose() for client in loop.clients), return_exceptions=True)

    try:
        loop.run(close_clients(), timeout=5.0)
    except Exception:  # noqa: BLE001
        pass
