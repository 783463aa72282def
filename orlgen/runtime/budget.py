"""The session budget: at most N sessions open at once against one environment, across a run.

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

Each process's share (no process talks to another): the budget is for the whole run, so a
process takes `N // W` slots, and the first `N % W` ranks one more, where `W` is `WORLD_SIZE`
(else `LOCAL_WORLD_SIZE`, else 1) and the rank is `RANK` (else `LOCAL_RANK`, else 0), as
torchrun and accelerate set them. Shares add up to exactly N. A budget smaller than W cannot be
shared and is an error at the first `reset`. `AsyncGRPOTrainer` runs every rollout in one worker
process, which TRL starts with those variables removed: the worker takes the whole budget.

A slot is taken before a session is opened and given back once the server has deleted it, or
when opening failed: however the rollout ends (finished, env error, the next `reset`, the
adapter collected, the process exiting). Every session an adapter holds, prefetched ones too,
holds a slot; `copy.copy` holds none.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from .errors import OrlgenRuntimeError

ENV_VAR = "ORLGEN_MAX_SESSIONS"


class BudgetError(OrlgenRuntimeError):
    """The session budget is set to something no process can use."""


class NoSlot(OrlgenRuntimeError):
    """No slot of the session budget came free in time."""


_lock = threading.Lock()
_process_max: list[int | None] = [None]  # set_max_sessions(n) without a class
_class_max: dict[type, int | None] = {}
_budgets: dict[Any, Budget] = {}  # env key → this process's budget for it
_leases: dict[int, tuple[Any, Budget]] = {}  # id(session) → (session, its budget)


def set_max_sessions(limit: int | None, adapter_class: type | None = None) -> None:
    """The run's session budget, for every env of this process or for one adapter class
    (None: back to the next source). Takes effect for budgets not yet made: call it before
    the first `reset`."""
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise BudgetError(f"the session budget must be a positive integer, not {limit!r}")
    with _lock:
        if adapter_class is None:
            _process_max[0] = limit
        else:
            _class_max[adapter_class] = limit


def run_limit(adapter_class: type | None = None) -> int | None:
    """The run-wide budget that applies to `adapter_class`, None when unlimited."""
    for cls in adapter_class.__mro__ if adapter_class is not None else ():
        if _class_max.get(cls) is not None:
            return _class_max[cls]
    if _process_max[0] is not None:
        return _process_max[0]
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


class Budget:
    """This process's slots for one env: a counting semaphore whose waits are measured. With
    no budget set it has no limit and only counts the sessions open (`open`, `peak`)."""

    def __init__(self, slots: int | None, run_limit: int | None) -> None:
        self.slots = slots
        self.run_limit = run_limit
        self.open = 0  # slots taken: sessions open, and being opened
        self.held = 0  # sessions open
        self.peak = 0  # the most slots ever taken at once
        self._free = threading.Condition()

    def _has_room(self) -> bool:
        return self.slots is None or self.open < self.slots

    def acquire(self, timeout: float | None, block: bool = True) -> float:
        """Take a slot, waiting at most `timeout` seconds; return the seconds waited.
        Raises NoSlot when none came free in time (or at once, with `block=False`)."""
        started = time.monotonic()
        with self._free:
            if block:
                self._free.wait_for(self._has_room, timeout)
            if not self._has_room():
                raise NoSlot(
                    f"all {self.slots} session slots of this process stayed taken for {timeout:g} s "
                    f"({ENV_VAR}={self.run_limit} for the run)"
                )
            self.open += 1
            self.peak = max(self.peak, self.open)
        return time.monotonic() - started

    def release(self) -> None:
        with self._free:
            self.open -= 1
            self._free.notify()


def for_env(key: Any, adapter_class: type | None) -> Budget:
    """This process's budget for the env `key`, made on first use (unlimited when none is set)."""
    with _lock:
        if key not in _budgets:
            limit = run_limit(adapter_class)
            _budgets[key] = Budget(None if limit is None else share(limit, *world()), limit)
        return _budgets[key]


def bind(session: Any, budget: Budget) -> None:
    """`session` holds one slot of `budget` until `release(session)`."""
    with _lock:
        _leases[id(session)] = (session, budget)
    with budget._free:
        budget.held += 1


def release(session: Any) -> None:
    """Give back the slot `session` holds, if any (idempotent)."""
    with _lock:
        lease = _leases.pop(id(session), None)
    if lease is not None:
        with lease[1]._free:
            lease[1].held -= 1
        lease[1].release()


def forget() -> None:
    """Drop every budget made so far: the next `reset` of each env reads the budget anew (for a
    notebook or a test that changes it). Sessions open now keep their slots' accounting."""
    with _lock:
        _budgets.clear()


def _after_fork() -> None:
    """A forked child starts with no budget and no lease: the parent's sessions are not its."""
    global _lock
    _lock = threading.Lock()
    _budgets.clear()
    _leases.clear()


os.register_at_fork(after_in_child=_after_fork)
