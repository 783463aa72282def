"""One session budget for a whole Ray cluster: the counts of `budget.Budget`, kept by one named
Ray actor per env and job instead of in each process.

verl starts its `AgentLoopWorker`s as Ray actors round-robin over every node, OpenRLHF runs its
agents inside vLLM engine actors, a user fans rollouts out as Ray tasks: each is a process of its
own, and a per-process budget would let each open its own share, or learn the env's capacity on
its own. When the runtime runs inside a Ray job (`ray` already imported and initialised: it is
never imported here), an env's budget keeps its counts in a `Tally` actor named after the env,
created or found with `get_if_exists` in the job's namespace, so every worker on every node
shares one cap (`ORLGEN_MAX_SESSIONS` is then the cluster's) and one learned window. Only counts
go through the actor (a round trip of a few milliseconds, against seconds to open a sandboxed
session); ORS traffic stays in the workers.

A server one worker finds dead (`errors.ServerDead`) is told to the actor, and every other
process of the cluster opens its own breaker on that news at its next `reset`
(`admission.open_sessions`), instead of finding it out by a failed rollout of its own; each then
watches the server itself and closes its breaker on the first answer. Other failures count per
process.

A worker or node that dies must not shrink the budget for the rest of the run. Each process's
share of the lease counts (`open`: slots taken, `held`: sessions open) is its own, reported with
every change, and a heartbeat every `BEAT_S` says it is alive (its leases count from a beat
only where the actor lost them); a holder not heard from for `LEASE_S` is gone, and its leases
with it. The actor asks for the head node (`node:__internal_head__`), which lives
as long as the cluster, and restarts if it fails: it rebuilds the leases from the next
heartbeats (the learned window is learned again).
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from typing import Any

from .. import process

BEAT_S = 2.0  # how often a process reports its leases
LEASE_S = 10.0  # a holder silent this long is gone: its leases are reclaimed
LEASED = ("open", "held")  # the counts that are leases, held per process


def in_ray() -> bool:
    """Whether this process is part of a Ray job (a driver after `ray.init`, a task, an actor)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


class Tally:
    """The actor: counts shared by a cluster. `add` and `swap` are the store's operations
    (`budget.Counts`); a lease count is the sum of each live holder's own."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}
        self.leases: dict[str, dict[str, int]] = {}  # holder → its lease counts
        self.heard: dict[str, float] = {}  # holder → when it last reported
        self.deaths: tuple[int, str, float] = (0, "", 0.0)  # servers found dead: how many, the last why and when

    def add(self, holder: str, name: str, amount: int) -> int:
        self._reclaim()
        self.heard[holder] = time.monotonic()
        if name in LEASED:
            own = self.leases.setdefault(holder, {})
            own[name] = max(0, own.get(name, 0) + amount)  # a holder reclaimed too early starts again
            return sum(counts.get(name, 0) for counts in self.leases.values())
        self.values[name] = self.values.get(name, 0) + amount
        return self.values[name]

    def swap(self, holder: str, name: str, old: int, new: int) -> bool:
        self.heard[holder] = time.monotonic()
        if self.values.get(name, 0) != old:
            return False
        self.values[name] = new
        return True

    def beat(self, holder: str, leases: dict[str, int]) -> None:
        """`holder` is alive. Its `leases` count only where the actor knows none of its own (it
        restarted, or reclaimed a holder that was only slow): a beat is older than any `add`
        sent after it, and must not undo one."""
        self.heard[holder] = time.monotonic()
        self.leases.setdefault(holder, dict(leases))
        self._reclaim()

    def found_dead(self, why: str) -> int:
        """A process found the server dead; the number of such findings so far."""
        self.deaths = (self.deaths[0] + 1, why, time.time())
        return self.deaths[0]

    def dead_news(self) -> tuple[int, str, float]:
        return self.deaths

    def stats(self) -> dict[str, Any]:
        self._reclaim()
        totals = {name: sum(counts.get(name, 0) for counts in self.leases.values()) for name in LEASED}
        return {**self.values, **totals, "holders": sorted(self.leases)}

    def _reclaim(self) -> None:
        now = time.monotonic()
        for holder in [h for h, when in self.heard.items() if now - when > LEASE_S]:
            del self.heard[holder]
            self.leases.pop(holder, None)


class RayCounts:
    """`budget.Counts` kept by the env's `Tally` actor: this process is one holder, reporting
    its leases on every change and every `BEAT_S`."""

    def __init__(self, actor: Any, holder: str) -> None:
        self._actor = actor
        self._holder = holder
        self._own: dict[str, int] = {}
        self._deaths_heard = 0
        self._lock = threading.Lock()

    def add(self, name: str, amount: int) -> int:
        import ray  # type: ignore[import-not-found, unused-ignore]

        if name in LEASED and amount:
            with self._lock:
                self._own[name] = max(0, self._own.get(name, 0) + amount)
        return int(ray.get(self._actor.add.remote(self._holder, name, amount)))

    def swap(self, name: str, old: int, new: int) -> bool:
        import ray  # type: ignore[import-not-found, unused-ignore]

        return bool(ray.get(self._actor.swap.remote(self._holder, name, old, new)))

    def tell_dead(self, why: str) -> None:
        """This process found the server dead: the cluster's other processes hear of it."""
        import ray  # type: ignore[import-not-found, unused-ignore]

        self._deaths_heard = max(self._deaths_heard, int(ray.get(self._actor.found_dead.remote(why))))

    def news_of_death(self, within: float) -> str | None:
        """Why another process found the server dead, when it did within the last `within`
        seconds and this process has not heard of it yet; else None."""
        import ray  # type: ignore[import-not-found, unused-ignore]

        count, why, when = ray.get(self._actor.dead_news.remote())
        if count <= self._deaths_heard:
            return None
        self._deaths_heard = count
        return str(why) if time.time() - when < within else None

    def beat(self) -> None:
        with self._lock:
            own = dict(self._own)
        self._actor.beat.remote(self._holder, own)  # fire and forget: a beat lost is the next one's


def counts_for(key: Any) -> RayCounts:
    """The counts of the env `key`'s cluster-wide budget and its news of a dead server, its actor
    created or found by name (in this job's namespace) on first use, this process's heartbeat
    started."""
    with _lock:
        if key not in _by_env:
            _by_env[key] = _attach(key)
        return _by_env[key]


def _attach(key: Any) -> RayCounts:
    import ray  # type: ignore[import-not-found, unused-ignore]

    name = "orlgen-budget-" + hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    actor = (
        ray.remote(Tally)
        .options(
            name=name,
            get_if_exists=True,
            lifetime="detached",  # not the fate of whichever worker came first: a node may die
            max_restarts=-1,
            num_cpus=0,
            resources={"node:__internal_head__": 0.001},
        )
        .remote()
    )
    context = ray.get_runtime_context()
    counts = RayCounts(actor, f"{context.get_node_id()[:12]}:{os.getpid()}")
    _beating.append(counts)  # under `_lock`, held by `counts_for`
    if len(_beating) == 1:
        threading.Thread(target=_beat_forever, name="orlgen-budget-beat", daemon=True).start()
    return counts


def _beat_forever() -> None:
    while True:
        time.sleep(BEAT_S)
        with _lock:
            beating = list(_beating)
        for counts in beating:
            try:
                counts.beat()
            except Exception:  # the cluster is shutting down: nothing left to report to
                pass


_lock = process.lock()
_by_env: dict[Any, RayCounts] = process.per_process({})  # env key → its counts, attached once
_beating: list[RayCounts] = process.per_process([])  # a forked child is another holder, and beats its own
