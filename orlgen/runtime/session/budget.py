"""The session budget: at most N sessions open at once against one environment, across a run,
N configured or learned from the env's refusals.

Hosted environments have a concurrency limit (the OpenReward platform's default is 500 sessions
per env; OpenEnv servers default to one; sandboxes bill for their lifetime), and TRL opens
`generation_batch_size` sessions at once across all ranks. Set the budget to the env's limit and
the env refuses nothing: a `reset` past it waits for a slot (within the adapter's `timeout`)
instead of failing.

Setting it:
    `ORLGEN_MAX_SESSIONS=N` in the environment of every process of the run, or in code,
    `orlgen.runtime.set_max_sessions(N)` (every env of the process) or
    `set_max_sessions(N, HelpdeskEnv)` (one adapter class; it wins over the process-wide value,
    which wins over the variable). TRL builds adapters with no arguments, hence no constructor
    option.

Learning it: with or without a budget, the first `429`/`503` to a new session teaches the
env's capacity: the sessions open at that moment (the window). The refused rollout, and every
later one past the window, waits in the budget's queue and is woken when a slot frees, instead
of each sleeping out `Retry-After` and asking again (only when nothing of the env is open, so
that nothing will free a slot, does a refused rollout sleep out `Retry-After`, as before). The
window grows back as TCP's does: by one per session opened while it is below the capacity last
learned, or while none was (slow start), and beyond that by one after `GROW_PERIOD_S` without a
refusal, which costs at most one refused create per period when the env's limit has not moved.
A configured budget still wins: the learned window never exceeds it.

Across processes: when this process is part of a `torch.distributed` job (torchrun and
accelerate start a process group, and with it a key-value store on the rank-0 host), the run's
whole budget and the learned window are one cap kept in that store: slots are taken and given
back with its atomic `add`, so uneven ranks (one busy, one idle) and several nodes share one
cap with no service of ours; a rank waiting on a slot another rank frees looks again every
`POLL_S`. Inside a Ray job the same counts are kept by one actor per env for the whole cluster
(`orlgen.runtime.session.cluster`: verl's and OpenRLHF's workers, a user's Ray tasks), a dead
worker's or node's leases reclaimed. Torch is never imported here: the store is used only when `torch.distributed` is
already imported and initialised. Without a process group each process takes a share, as no
process talks to another: `N // W` slots, and the first `N % W` ranks one more, where `W` is
`WORLD_SIZE` (else `LOCAL_WORLD_SIZE`, else 1) and the rank is `RANK` (else `LOCAL_RANK`, else
0), as torchrun and accelerate set them. Shares add up to exactly N. A budget smaller than W
cannot be shared and is an error at the first `reset`. `AsyncGRPOTrainer` runs every rollout in
one worker process, which TRL starts with those variables removed and no process group: the
worker takes the whole budget.

Replicas (`Connection.replicas`): the configured budget is the env's, all its replicas together,
as it is for one server (what a user sets is how many sessions the run may hold of the env,
whichever server holds them; a per-replica cap would change with the number of replicas). Each
replica has a budget of its own besides (`for_env(..., configured=False)`) that only learns that
server's capacity from its refusals and counts its open sessions: a pool's session holds a slot
of both. A refusal while this process holds nothing on a replica (other clients fill it) teaches
no window; the replica is `busy` instead, and its pool picks another for a while.

A slot is taken before a session is opened and given back once the server has deleted it, or
when opening failed: however the rollout ends (finished, env error, the next `reset`, the
adapter collected, the process exiting). Every session an adapter holds, prefetched ones too,
holds a slot; `copy.copy` holds none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import threading
import time
from typing import Any, Protocol

from .. import process
from ..errors import OrlgenRuntimeError
from . import cluster

ENV_VAR = "ORLGEN_MAX_SESSIONS"
GROW_PERIOD_S = 10.0  # a learned window grows by one after this long without a refusal
POLL_S = 0.1  # how often a rollout waiting on a cap shared with other processes looks again


class BudgetError(OrlgenRuntimeError):
    """The session budget is set to something no process can use."""


class NoSlot(OrlgenRuntimeError):
    """No slot of the session budget came free in time."""


_lock = process.lock()
# Configuration, which a forked child keeps: set_max_sessions(n, cls) by class; without a class,
# under `object` (the end of every class's MRO: any class's own limit wins over it).
_class_max: dict[type, int | None] = {}
_budgets: dict[Any, Budget] = process.per_process({})  # env key → this process's budget for it
# id(session) → (session, its budget, and its replica's budget for a pool's session)
_leases: dict[int, tuple[Any, Budget, Budget | None]] = process.per_process({})


def set_max_sessions(limit: int | None, adapter_class: type | None = None) -> None:
    """The run's session budget, for every env of this process or for one adapter class
    (None: back to the next source). Takes effect for budgets not yet made: call it before
    the first `reset`."""
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise BudgetError(f"the session budget must be a positive integer, not {limit!r}")
    with _lock:
        _class_max[adapter_class or object] = limit


def run_limit(adapter_class: type | None = None) -> int | None:
    """The run-wide budget that applies to `adapter_class`, None when unlimited."""
    for cls in (adapter_class or object).__mro__:
        if _class_max.get(cls) is not None:
            return _class_max[cls]
    raw = os.environ.get(ENV_VAR, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise BudgetError(f"{ENV_VAR}={raw!r} is not a positive integer")
    return int(raw)


def world() -> tuple[int, int]:
    """(processes, this process's rank) as torchrun/accelerate announce them; (1, 0) alone."""
    size = os.environ.get("WORLD_SIZE") or os.environ.get("LOCAL_WORLD_SIZE") or "1"
    rank = os.environ.get("RANK") or os.environ.get("LOCAL_RANK") or "0"
    return max(1, int(size)), int(rank)


def share(limit: int, processes: int, rank: int) -> int:
    """This rank's slots of a run-wide budget: `limit // processes`, one more for the first
    `limit % processes` ranks."""
    if limit < processes:
        raise BudgetError(
            f"the session budget ({ENV_VAR}={limit}) is smaller than the run's {processes} processes "
            "(WORLD_SIZE): each process needs at least one session"
        )
    return limit // processes + (rank < limit % processes)


class Requeue(OrlgenRuntimeError):
    """A new session was refused while other sessions of the env are open or opening: the rollout
    waits in the budget's queue for one of them to close instead of sleeping out `Retry-After`."""


class _LocalCounts:
    """The counts of a budget no other process shares (used under the budget's lock)."""

    def __init__(self) -> None:
        self._values: dict[str, int] = {}

    def add(self, name: str, amount: int) -> int:
        self._values[name] = self._values.get(name, 0) + amount
        return self._values[name]

    def swap(self, name: str, old: int, new: int) -> bool:
        if self._values.get(name, 0) != old:
            return False
        self._values[name] = new
        return True


class _StoreCounts:
    """The counts of a budget every process of a `torch.distributed` job shares, kept in the job's
    own store (the rendezvous key-value store torchrun and accelerate start): atomic `add` and
    `compare_set`, nothing of ours to run."""

    def __init__(self, store: Any, prefix: str) -> None:
        self._store = store
        self._prefix = prefix

    def add(self, name: str, amount: int) -> int:
        return int(self._store.add(self._prefix + name, amount))

    def swap(self, name: str, old: int, new: int) -> bool:
        self.add(name, 0)  # a counter the store knows, so compare_set compares its text
        now = self._store.compare_set(self._prefix + name, str(old), str(new))
        return bytes(now) == str(new).encode()


class SharedCounts(Protocol):
    """Counts several processes share: the job's `torch.distributed` store (`_StoreCounts`), or
    a Ray cluster's actor (`orlgen.runtime.session.cluster.RayCounts`)."""

    def add(self, name: str, amount: int) -> int: ...

    def swap(self, name: str, old: int, new: int) -> bool: ...


Counts = _LocalCounts | SharedCounts


class Budget:
    """One env's session cap as this process sees it: a counting semaphore whose waits are
    measured, capped by the configured budget (`slots`) and by the capacity learned from the
    env's refusals (`window`), whichever is smaller. Its counts are this process's own, or the
    job's (`shared`), kept in the `torch.distributed` store. With neither cap it only counts the
    sessions open (`open`, `peak`)."""

    def __init__(self, slots: int | None, run_limit: int | None, counts: SharedCounts | None = None) -> None:
        self.slots = slots  # the configured cap: this process's share, or the run's when shared
        self.run_limit = run_limit
        self.shared = counts is not None
        self._counts: Counts = counts if counts is not None else _LocalCounts()
        self.open = 0  # this process's slots taken: sessions open, and being opened
        self.held = 0  # this process's sessions open
        self.peak = 0  # the most slots this process ever took at once
        self._turn = 0  # a pool's picks of a replica so far (`next_turn`)
        self._busy_at: float | None = None  # a refusal that taught no window (`busy`)
        self._free = threading.Condition()
        self._calm = (self._counts.add("refusals", 0), time.monotonic())  # refusals seen, and since when

    def next_turn(self) -> int:
        """For a pool's budget: how many replicas this process picked before this pick, which
        turns `admission`'s tie order one replica further each time."""
        with self._free:
            self._turn += 1
            return self._turn - 1

    @property
    def window(self) -> int | None:
        """The capacity learned from the env's refusals, None before the first."""
        return self._counts.add("window", 0) or None

    def _cap(self) -> int | None:
        caps = [cap for cap in (self.slots, self.window) if cap is not None]
        return min(caps) if caps else None

    def _take(self) -> bool:
        cap = self._cap()
        if self._counts.add("open", 1) > (cap if cap is not None else float("inf")):
            self._counts.add("open", -1)
            return False
        with self._free:
            self.open += 1
            self.peak = max(self.peak, self.open)
        return True

    def acquire(self, timeout: float | None, block: bool = True) -> float:
        """Take a slot, waiting at most `timeout` seconds; return the seconds waited (0 when a
        slot was free: taking one from the job's store is a round trip, not a wait).
        Raises NoSlot when none came free in time (or at once, with `block=False`).

        Shared counts are asked without holding this budget's lock (each ask is a round trip
        to the store or the cluster's actor): waiters of one process never queue behind each
        other's asks, nor hold up a slot given back meanwhile. Local counts are asked under it."""
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        waited = False
        with self._free if not self.shared else contextlib.nullcontext():
            while not self._take():
                if self._grow_if_calm():
                    continue
                left = None if deadline is None else deadline - time.monotonic()
                if not block or (left is not None and left <= 0):
                    raise NoSlot(self._why_full(timeout))
                nap = self._nap(left)
                with self._free:  # a slot this process gives back wakes it early
                    self._free.wait(nap)
                waited = True
        return time.monotonic() - started if waited else 0.0

    def _nap(self, left: float | None) -> float | None:
        """How long a waiter sleeps before it looks again: until woken by a slot this process
        gives back, but no longer than a slot another process gives back (which wakes no one
        here) or the learned window's next growth takes."""
        naps = [nap for nap in (left, POLL_S if self.shared else None) if nap is not None]
        if self.window is not None:
            naps.append(max(0.01, self._calm[1] + GROW_PERIOD_S - time.monotonic()))
        return min(naps) if naps else None

    def release(self) -> None:
        """Give back a slot whose session never opened (or has been deleted: `closed`)."""
        if self.shared:
            self._counts.add("open", -1)  # a round trip: not under the lock
        with self._free:
            if not self.shared:
                self._counts.add("open", -1)
            self.open -= 1
            self._free.notify()

    def opened(self) -> None:
        """A session opened: it holds its slot. Below the capacity last learned (the window shrank
        further, or nothing of this process was open at the refusal) the window grows by one per
        open, as TCP's slow start does, and never stays below what is open. The env had room:
        it is no longer `busy`."""
        with self._free:
            self._busy_at = None
            self.held += 1
            held = self._counts.add("held", 1)
            window = self._counts.add("window", 0)
            if not window:
                return
            learned = self._counts.add("learned", 0)
            grown = max(window + 1 if window < learned or not learned else window, held)
            grown = min(grown, self.slots) if self.slots is not None else grown
            if grown > window and self._counts.swap("window", window, grown):
                self._free.notify(grown - window)

    def closed(self) -> None:
        """The server deleted a session: its slot is free."""
        with self._free:
            self.held -= 1
            self._counts.add("held", -1)
        self.release()

    def refused(self) -> bool:
        """The env refused a new session (at its limit) to a rollout holding one slot. Learn its
        capacity: the sessions open at that moment. True when the rollout should wait in the
        queue (sessions are open or being opened that will give a slot back); False when nothing
        is, so only the env's `Retry-After` can tell when to ask again: the env is full of other
        clients' sessions, and `busy` says so for a while)."""
        with self._free:
            self._calm = (self._counts.add("refusals", 1), time.monotonic())
            if self._counts.add("open", 0) <= 1:
                self._busy_at = self._calm[1]
                return False
            held = self._counts.add("held", 0)
            if held:
                self._put("learned", held)
            self._put("window", max(1, held))
            return True

    def busy(self) -> bool:
        """Whether the env refused a session within the last `GROW_PERIOD_S` while this process
        held nothing else there (other clients fill it; no window to learn), and none opened
        since: a pool ranks such a replica as full (`admission._pick`) rather than ask it again."""
        with self._free:
            return self._busy_at is not None and time.monotonic() - self._busy_at < GROW_PERIOD_S

    def _put(self, name: str, value: int) -> None:
        for _ in range(8):  # another process may change it between the read and the swap
            if self._counts.swap(name, self._counts.add(name, 0), value):
                return

    def _grow_if_calm(self) -> bool:
        """One more slot in the learned window after GROW_PERIOD_S without a refusal (TCP's
        additive increase), never past the configured cap; True when it grew."""
        window = self._counts.add("window", 0)
        if not window or (self.slots is not None and window >= self.slots):
            return False
        refusals, now = self._counts.add("refusals", 0), time.monotonic()
        if refusals != self._calm[0] or now - self._calm[1] < GROW_PERIOD_S:
            if refusals != self._calm[0]:
                self._calm = (refusals, now)
            return False
        self._calm = (refusals, now)
        return self._counts.swap("window", window, window + 1)

    def _why_full(self, timeout: float | None) -> str:
        if self.window is not None and (self.slots is None or self.window < self.slots):
            return (
                f"the environment stayed at its session limit for {timeout:g} s (it refused a new session "
                f"while {self.window} were open; this process held {self.held} and none closed in time): set "
                f"{ENV_VAR} to the env's limit so that rollouts wait for a slot instead of asking"
            )
        whose = "the run's" if self.shared else "this process's"
        return (
            f"all {self.slots} session slots of {whose} stayed taken for {timeout:g} s "
            f"({ENV_VAR}={self.run_limit} for the run)"
        )


def for_env(key: Any, adapter_class: type | None, configured: bool = True) -> Budget:
    """This process's budget for the env `key`, made on first use: the run's whole budget shared
    through the job's store when there is one, or through the Ray cluster's actor inside a Ray
    job (`orlgen.runtime.session.cluster`), else this rank's share (unlimited when none is set).
    `configured=False`: a replica's budget, which learns its server's capacity and applies no
    configured cap (the env's budget does)."""
    with _lock:
        if key not in _budgets:
            limit = run_limit(adapter_class) if configured else None
            store = job_store()
            if store is not None:
                prefix = "orlgen/budget/" + hashlib.sha256(repr(key).encode()).hexdigest()[:16] + "/"
                _budgets[key] = Budget(limit, limit, _StoreCounts(store, prefix))
            elif cluster.in_ray():
                _budgets[key] = Budget(limit, limit, cluster.counts_for(key))
            else:
                _budgets[key] = Budget(None if limit is None else share(limit, *world()), limit)
        return _budgets[key]


def job_store() -> Any:
    """The key-value store of this process's `torch.distributed` job (its default group's), None
    when there is none: torch not imported (it is never imported here), no process group, or a
    forked child, whose copy of the parent's connection is not its own."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or process.forked():
        return None
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return None
        return dist.distributed_c10d._get_default_store()
    except Exception:  # a torch without the store, or a group torn down: share as without one
        return None


def bind(session: Any, budget: Budget, replica: Budget | None = None) -> None:
    """`session` holds one slot of `budget` (and of its `replica`'s budget, for a pool's session)
    until `release(session)`."""
    with _lock:
        _leases[id(session)] = (session, budget, replica)
    budget.opened()
    if replica is not None:
        replica.opened()


def release(session: Any) -> None:
    """Give back the slots `session` holds, if any (idempotent)."""
    with _lock:
        lease = _leases.pop(id(session), None)
    for held in lease[1:] if lease is not None else ():
        if held is not None:
            held.closed()


def forget() -> None:
    """Drop every budget made so far: the next `reset` of each env reads the budget anew (for a
    notebook or a test that changes it). Sessions open now keep their slots' accounting."""
    with _lock:
        _budgets.clear()
