"""How generated code reaches its environment: one SDK client per process and address.

`openreward` is imported here lazily, on the first session or live dataset fetch: importing it
costs about two seconds and a training script imports generated modules at start-up.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal


class ConfigError(RuntimeError):
    """Generated code does not know where its environment is."""


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

    def environment(self) -> Any:
        """The SDK's environment handle, shared by every adapter of this process."""
        return _environment(self)


_lock = threading.Lock()
_handles: dict[tuple[int, Connection], Any] = {}
_exit_hooks: list[Callable[[], None]] = []


def _environment(connection: Connection) -> Any:
    # Keyed by pid: a forked child must build its own client, never reuse the parent's loop thread.
    key = (os.getpid(), connection)
    with _lock:
        handle = _handles.get(key)
        if handle is None:
            handle = _handles[key] = _open(connection)
    return handle


def _open(connection: Connection) -> Any:
    import openreward

    if connection.url is not None:
        client = openreward.OpenReward(api_key=connection.api_key, base_url=connection.url)
        handle = client.environments.get(connection.env, variant=connection.env, base_url=connection.url)
    else:
        api_key = connection.api_key or os.environ.get("OPENREWARD_API_KEY")
        client = openreward.OpenReward(api_key=api_key)
        handle = client.environments.get(connection.catalog)
    # Registered after the SDK registered its own exit handler, so ours runs first (atexit is
    # LIFO) and open sessions are deleted while the SDK's event loop still runs.
    atexit.register(_run_exit_hooks)
    return handle


def on_exit(hook: Callable[[], None]) -> None:
    """Run `hook` at interpreter exit, before the SDK shuts its event loop down."""
    _exit_hooks.append(hook)


def _run_exit_hooks() -> None:
    while _exit_hooks:
        hook = _exit_hooks.pop()
        try:
            hook()
        except Exception:  # noqa: BLE001 - exit is best effort; the server reaps what we miss
            pass
