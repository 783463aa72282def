"""A circuit breaker per environment: stop asking an env that fails every request.

Without one, a down or flapping env makes every rollout of every batch wait for its own failure
(a refused connection takes the SDK seconds to give up; a hung server takes the whole
`timeout`). The breaker counts the env's failures in a row, per process:

- closed: requests go through. `ORLGEN_BREAKER_FAILURES` (default 5) environment failures in a
  row, with no success between, open it.
- open: a `reset` ends its rollout at once, unscored, with one line saying why and when the next
  try is; no request is sent. After `ORLGEN_BREAKER_COOLDOWN` seconds (default 30) it is
  half-open.
- half-open: the next `reset` is the probe and goes through; the others still end at once while
  it runs. A probe that succeeds (its session opens and its prompt is read) closes the breaker;
  one that fails opens it for twice the last cool-down (at most 10 minutes).

What counts as a failure: an error the environment caused (unreachable, timed out, a 5xx, 402,
a crashed tool). A busy env (429 past the deadline) or a model's bad arguments are no failure.
A server found dead (`errors.ServerDead`: it refuses connections after a session opened, or
sends no byte for `ORLGEN_HANG_SECONDS`) opens the breaker at once (`trip`), and the breaker
covers tool calls too (`refusing`): every other rollout of the env ends at its next call instead
of finding the same thing out for itself.

A dead server is also watched (`watch`): while the breaker stays open on it, one probe at a time
asks the server's `/health`, every `PROBE_EVERY` seconds (`admission` sends them), and the first
answer closes the breaker. A restarted server (a crash, a redeploy) is used again a second or so
after it answers, not after the cool-down: in GRPOTrainer's serial order every rollout of that
window would end unplayed. Only a dead server is watched: an env that fails its sessions on a
live server answers `/health` all along, so there the cool-down and its half-open probe decide.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from .. import process
from ..errors import first_line

FAILURES_VAR = "ORLGEN_BREAKER_FAILURES"
COOLDOWN_VAR = "ORLGEN_BREAKER_COOLDOWN"
MAX_COOLDOWN = 600.0
PROBE_EVERY = 1.0  # seconds between two health probes of a dead server
PROBE_TIMEOUT = 5.0  # seconds one health probe may take (a hung server answers nothing)


class Breaker:
    def __init__(self, failures: int, cooldown: float) -> None:
        self.threshold = failures
        self.base_cooldown = self.cooldown = cooldown
        self.failures = 0  # in a row
        self.opened_at: float | None = None  # None: closed
        self.probing = False
        self.dead: str | None = None  # why the breaker was tripped at once, if it was
        self.watched = False  # a health probe watches the dead server (one at a time)
        self.probes = 0  # health probes sent
        self._lock = threading.Lock()

    def admit(self) -> str | None:
        """None when a request may go (the caller reports the outcome); else why not, in one line."""
        with self._lock:
            if self.opened_at is None:
                return None
            left = self.opened_at + self.cooldown - time.monotonic()
            if left <= 0 and not self.probing:
                self.probing = True  # half-open: this caller is the probe
                return None
            return self._why(left)

    def refusing(self) -> str | None:
        """Why a call should not be sent (open, and cooling down or probed), without becoming the
        probe; None when it may go."""
        with self._lock:
            if self.opened_at is None:
                return None
            left = self.opened_at + self.cooldown - time.monotonic()
            return self._why(left) if left > 0 or self.probing else None

    def _why(self, left: float) -> str:
        when = "a probe is running" if left <= 0 else f"next try in {left:.0f} s"
        cause = (
            f"the server was found dead ({self.dead})"
            if self.dead
            else f"the last {self.failures} requests to this environment failed"
        )
        return f"circuit open: {cause}; rollouts end at once until it answers again ({when})"

    def succeeded(self) -> None:
        with self._lock:
            self.dead = None
            self.failures = 0
            self.opened_at = None
            self.probing = False
            self.cooldown = self.base_cooldown

    def failed(self) -> str | None:
        """Count a failure; when it opened the breaker, why it refuses from now on (else None)."""
        with self._lock:
            return self._count(self.threshold)

    def trip(self, why: str) -> str | None:
        """The server was found dead: open now, whatever the count (returns as `failed`)."""
        with self._lock:
            self.dead = first_line(why)[:200] or "no reason given"
            return self._count(1)

    def _count(self, threshold: int) -> str | None:
        self.failures += 1
        if self.probing:  # the probe failed: open again, for longer
            self.probing = False
            self.cooldown = min(MAX_COOLDOWN, self.cooldown * 2)
        elif self.opened_at is not None or self.failures < threshold:
            return None
        self.opened_at = time.monotonic()
        return self._why(self.cooldown)  # the adapter says it once (it knows which env this is)

    def watch(self) -> bool:
        """Claim the watch of a dead server: True for the one caller that should start probing
        it (the breaker is open on a dead server and nobody watches it yet)."""
        with self._lock:
            if self.watched or self.dead is None or self.opened_at is None:
                return False
            self.watched = True
            return True

    def watching(self) -> bool:
        """Whether the watch goes on (the breaker is still open on a dead server); when not, it ends."""
        with self._lock:
            self.watched = self.dead is not None and self.opened_at is not None
            return self.watched

    def probed(self) -> None:
        with self._lock:
            self.probes += 1

    def abandon(self) -> None:
        """The caller asked nothing of the env after all (no budget slot came free): if it was
        the probe, the next caller is."""
        with self._lock:
            self.probing = False

    @property
    def state(self) -> str:
        with self._lock:
            return "closed" if self.opened_at is None else "half-open" if self.probing else "open"


_lock = process.lock()
_breakers: dict[Any, Breaker] = process.per_process({})


def for_env(key: Any) -> Breaker:
    """This process's breaker for the env `key`, made on first use from the two variables."""
    with _lock:
        if key not in _breakers:
            failures = int(os.environ.get(FAILURES_VAR) or 5)
            cooldown = float(os.environ.get(COOLDOWN_VAR) or 30.0)
            _breakers[key] = Breaker(max(1, failures), max(0.0, cooldown))
        return _breakers[key]


def forget() -> None:
    """Drop every breaker: each env starts closed, with the variables read anew."""
    with _lock:
        _breakers.clear()
