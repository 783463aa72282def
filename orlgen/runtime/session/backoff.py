"""Waiting, not failing, when an environment is busy.

An env at its concurrency limit answers `429` (or `503`) to a new session, usually with
`Retry-After`. The SDK retries that three times in about two seconds and gives up, and the
rollout would end as an environment error. Here a session's opening is retried until the
adapter's `timeout`: each wait honours `Retry-After` when the server sent one (else 0.5 s,
doubling up to 10 s), stretched by a random 0-50 % so that the rollouts refused together do not
come back together. When time runs out the rollout ends unscored, with one line that says the
env is at its limit and names the budget knob.

`402 Payment Required` is not busy: the OpenReward account has no credit, and every request
will fail the same way until it is funded; it is reported in one line and never retried.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .. import process
from ..errors import OrlgenRuntimeError
from ..ors.errors import payment_required
from .budget import ENV_VAR
from .metrics import COUNTERS

T = TypeVar("T")

BUSY = (429, 503)
FIRST_WAIT = 0.5
MAX_WAIT = 10.0
# Jitter only: never shared with the caller's RNG; reseeded in a forked child, whose retries would
# otherwise keep in step with its parent's and siblings'.
_random = process.per_process(random.Random(), random.Random.seed)


class AtCapacity(OrlgenRuntimeError):
    """The environment kept refusing new sessions until the deadline."""


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of an ORS client error, None for anything else."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


async def open_patiently(
    open_once: Callable[[], Awaitable[T]],
    timeout: float,
    holding: Callable[[], int],
    on_busy: Callable[[BaseException], None] | None = None,
) -> T:
    """`await open_once()`, retried on 429/503 until `timeout` seconds have passed.

    `holding()` tells how many sessions this process holds on the env, for the message;
    `on_busy(exc)` hears of each refusal first, and may end the retries by raising (the budget's
    `Requeue`: the rollout waits in its queue instead).
    """
    started = time.monotonic()
    deadline = started + timeout
    attempt = 0
    while True:
        try:
            session = await open_once()
            if attempt:  # it waited for the env's capacity
                COUNTERS.add("capacity_waits")
                COUNTERS.add("capacity_wait_s", time.monotonic() - started)
            return session
        except Exception as exc:
            status = status_of(exc)
            if status == 402:
                raise payment_required() from exc
            if status not in BUSY:
                raise
            if on_busy is not None and not getattr(exc, "backend_starting", False):
                on_busy(exc)  # a refusal at capacity; a backend still starting says nothing of it
            wait = _wait(getattr(exc, "retry_after", None), attempt)
            if time.monotonic() + wait > deadline:
                raise AtCapacity(
                    f"the environment stayed at its session limit ({status} to every new session for "
                    f"{timeout:g} s, while this process held {holding()}): set {ENV_VAR} to the env's "
                    "limit so that rollouts wait for a slot instead of asking"
                ) from exc
            attempt += 1
            await asyncio.sleep(wait)


def _wait(retry_after: Any, attempt: int) -> float:
    base = float(retry_after) if isinstance(retry_after, int | float) and retry_after >= 0 else None
    if base is None:
        base = min(MAX_WAIT, FIRST_WAIT * 2**attempt)
    return base * (1.0 + 0.5 * _random.random())
