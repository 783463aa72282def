"""When the wire sends a request again, and after how long: HTTP-level retries only.

429/502/503/504 and refused connections are retried, honouring `Retry-After` (seconds or an HTTP
date, capped at `MAX_WAIT`); `503` with `X-Backend-State: starting` is ridden out to
`ORLGEN_STARTING_SECONDS`; never a 500 or another 4xx. A refused connection is retried for the
request's window only (`REFUSED_WINDOW` by default), then the server is gone. A request that
changes the env is re-sent only when that cannot run it twice (`idempotent`, which the client
decides: see `client.SIDE_EFFECTS`): a 429 or 503 is the server's refusal, so always safe; a 502
or 504 may come from a gateway that forwarded it, and a broken connection may have delivered it.
Waiting out a busy env (429/503) is the session layer's `backoff` when the caller asks so (`busy`).
"""

from __future__ import annotations

import email.utils
import json
import os
import time

import aiohttp

from .errors import StatusError, StreamBroken

RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Statuses by which the server (or a gateway) says it did not take the request in: safe to re-send
# anything. A 502 or 504 may come from a gateway after it forwarded the request (RFC 9110 15.6.3,
# 15.6.5: an invalid or missing upstream answer), so the env may have run it.
REFUSED_STATUSES = frozenset({429, 503})
MAX_ATTEMPTS = 3  # for a transient status that is not "starting"
MAX_WAIT = 10.0  # cap on any one wait, Retry-After included
REFUSED_WINDOW = 2.0  # seconds a refused connection is retried
STARTING_VAR = "ORLGEN_STARTING_SECONDS"  # riding out "503 starting", and an env being built


def starting_seconds() -> float:
    return float(os.environ.get(STARTING_VAR) or 600.0)


class Retry:
    """One request's retries: whether to send it again after a failure, and after how long."""

    def __init__(self, busy: bool, window: float, broken: int = 0) -> None:
        self.busy = busy  # retry 429 and 503 too (False: they are raised for `backoff`)
        self.window = window
        self.broken = broken  # breaks still allowed (only once a call has its task_id)
        self.started = time.monotonic()
        self.attempts = 0
        self.refused_since: float | None = None

    def wait(self, exc: BaseException, idempotent: bool) -> float | None:
        """Seconds to wait before sending the request again after `exc`; None: do not."""
        self.attempts += 1
        if isinstance(exc, StatusError):
            self.refused_since = None
            return self._after_status(exc, idempotent)
        if isinstance(exc, aiohttp.ClientConnectorError):  # nothing reached the server
            now = time.monotonic()
            self.refused_since = self.refused_since or now
            return min(0.25 * 2 ** min(self.attempts, 3), 1.0) if now - self.refused_since < self.window else None
        if isinstance(
            exc, (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, StreamBroken)
        ):
            if idempotent and (self.broken > 0 or self.attempts < MAX_ATTEMPTS):
                self.broken -= 1
                return 0.05
        return None

    def _after_status(self, exc: StatusError, idempotent: bool) -> float | None:
        if exc.status == 503 and exc.backend_starting:
            starting = time.monotonic() - self.started < starting_seconds()
            return _capped(exc.retry_after, self.attempts) if starting else None
        # A 429/503 is the env's own "not now" (the caller may wait it out itself); a 502/504
        # may come after a gateway forwarded the request, so only an idempotent one goes again.
        busy = exc.status in REFUSED_STATUSES
        if exc.status in RETRY_STATUSES and (self.busy if busy else idempotent) and self.attempts < MAX_ATTEMPTS:
            return _capped(exc.retry_after, self.attempts)
        return None


def _capped(retry_after: float | None, attempt: int) -> float:
    wait = retry_after if retry_after is not None else 0.5 * 2 ** (attempt - 1)
    return max(0.0, min(MAX_WAIT, wait))


def parse_retry_after(value: str | None) -> float | None:
    """`Retry-After` in seconds: an integer, or an HTTP date (seconds from now); None otherwise."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


async def raise_for_status(response: aiohttp.ClientResponse) -> None:
    """A `StatusError` for an error status, with the server's `detail`, its `Retry-After` and
    whether its backend is still starting: what `Retry.wait` decides on."""
    if response.status < 400:
        return
    text = (await response.read()).decode("utf-8", "replace")  # bounded by the response class
    try:
        detail = json.loads(text).get("detail", text)
    except (ValueError, AttributeError):
        detail = text
    raise StatusError(
        response.status,
        " ".join(str(detail).split())[:500] or response.reason or "",
        parse_retry_after(response.headers.get("Retry-After")),
        response.headers.get("X-Backend-State") == "starting",
        said=str(detail),
    )
