"""Capture's way to a server: the `openreward` SDK's environment handles, on the runtime's loop.

Capture (the generator) keeps the SDK: it reads everything a server offers (`list_splits`,
`list_tasks`, task ranges, sessions of probe tasks) and its tests compare what it records with
what the SDK itself returns. The training path does not: `orlgen.runtime` speaks ORS itself
(`orlgen.runtime.ors`). What lives here moved out of the runtime with that change: the SDK handle
per `Connection`, the guards set on its HTTP clients (`guard`), and secrets in the form the SDK
takes (`session_secrets`).
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from orlgen.runtime import provenance, transport
from orlgen.runtime.connection import Connection, on_exit, run_on_loop
from orlgen.runtime.secrets import WELL_KNOWN_SECRETS

T = TypeVar("T")

_handles: dict[Connection, Any] = {}  # SDK environment handles, one per connection
_clients: list[Any] = []  # SDK clients, closed at exit


def run(connection: Connection, call: Callable[[Any], Awaitable[T]], timeout: float | None) -> T:
    """`await call(handle)` with the SDK's environment handle for `connection`, on the runtime's
    loop, waiting at most `timeout` seconds."""

    async def with_handle() -> T:
        return await call(_handle(connection))

    return run_on_loop(with_handle(), timeout)


def _handle(connection: Connection) -> Any:
    """The SDK's environment handle for `connection`, made once per process (on the loop)."""
    if connection not in _handles:
        from openreward import AsyncOpenReward

        client = AsyncOpenReward(api_key=connection.api_key, base_url=connection.url)
        if connection.url is not None:
            client.api_key = connection.api_key  # the SDK falls back to OPENREWARD_API_KEY; we do not
            handle = client.environments.get(connection.env, variant=connection.env, base_url=connection.url)
        else:
            handle = client.environments.get(connection.catalog)
        if not _clients:
            on_exit(_close_clients)
        _clients.append(client)
        guard(handle, connection.max_answer_bytes)
        _handles[connection] = handle
    return _handles[connection]


def _close_clients() -> None:
    async def close() -> None:
        # Together: each `aclose` sleeps 0.25 s for aiohttp's graceful shutdown.
        await asyncio.gather(*(client.environments.aclose() for client in _clients), return_exceptions=True)

    try:
        run_on_loop(close(), timeout=5.0)
    except Exception:  # exit is best effort
        pass


def guard(handle: Any, limit: int | None) -> None:
    """Guard every client of an SDK environment handle: refuse redirects to another origin, and,
    with `limit`, refuse any answer (JSON or streamed) of more than `limit` bytes. The SDK builds
    its aiohttp clients itself, so the guarded response class is set on them afterwards."""
    response_class = transport.guarded_response(limit)
    for client in {id(c): c for c in (handle.client, getattr(handle, "api_client", None)) if c is not None}.values():
        client._response_class = response_class


async def deployment(handle: Any) -> dict[str, str] | None:
    """The deployment the server reports at `/version`, as snapshot fields (`provenance.parse`)."""
    from openreward.api._session import request_retryable

    answer = await request_retryable(
        handle.client, "GET", "/version", expect_json=True, deployment=handle.deployment_name, token=handle.api_key
    )
    return provenance.parse(answer)


def session_secrets(secrets: Mapping[str, Any] | None, connection: Connection) -> dict[str, Any] | None:
    """`secrets` in the form the SDK accepts for a session.

    The SDK takes a plain value only for names in its `WELL_KNOWN_SECRETS` (it knows which
    domains they are for); any other name needs `(value, allowed_domains)`. We allow such a
    secret to reach the host that serves the environment, and no other. A caller that knows
    better passes the tuple itself.
    """
    if not secrets:
        return None
    host = urllib.parse.urlsplit(connection.url or "").hostname
    domains = [host] if host else []
    return {
        name: value if isinstance(value, tuple) or name in WELL_KNOWN_SECRETS else (value, domains)
        for name, value in secrets.items()
    }
