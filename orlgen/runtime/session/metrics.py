"""Process counters that training logs beside the scoring coverage, and their sum across ranks.

Each process counts what its own adapters saw: sessions opened, waits for capacity (a `reset` that waited for a
budget slot, or whose session was refused as busy and retried) and the seconds they waited,
rollouts the circuit breaker ended at once, and the latency of every tool call by tool. Counts
are kept as sums (and counts for means), so that several ranks' numbers add up before anything
is divided: `gather` merges every rank's raw counts with accelerate, as TRL gathers its own
tool counts, and every rank then logs the same run-wide numbers (the trainer writes the main
process's log).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from .. import process

Raw = dict[str, float]


class Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._raw: defaultdict[str, float] = defaultdict(float)

    def add(self, name: str, value: float = 1.0) -> None:
        with self._lock:
            self._raw[name] += value

    def tool_call(self, tool: str, seconds: float) -> None:
        with self._lock:
            self._raw[f"tool_seconds/{tool}"] += seconds
            self._raw[f"tool_count/{tool}"] += 1

    def take(self) -> Raw:
        """The counts since the last take, and zero them."""
        with self._lock:
            raw = dict(self._raw)
            self._raw.clear()
        return raw

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._raw.clear()


COUNTERS = process.per_process(Counters(), Counters._after_fork)


def merge(parts: Iterable[Mapping[str, float]]) -> Raw:
    """Several processes' raw counts, summed."""
    total: defaultdict[str, float] = defaultdict(float)
    for part in parts:
        for name, value in part.items():
            total[name] += value
    return dict(total)


def gather(raw: Raw, accelerator: Any) -> Raw:
    """The sum of `raw` over every process of `accelerator` (a collective: every rank calls it
    at the same point); `raw` itself when there is one process."""
    if accelerator is None or getattr(accelerator, "num_processes", 1) <= 1:
        return raw
    from accelerate.utils import gather_object

    return merge(gather_object([raw]))


# The counters a trainer that averages per-rollout metrics over its batch is given with each rollout.
PER_ROLLOUT = ("sessions_opened", "capacity_waits", "capacity_wait_s", "breaker_rejections", "images_refused")


def since_last_rollout() -> dict[str, float]:
    """What this process counted since the previous call, by the names of `PER_ROLLOUT`, every
    name present: for the shims whose trainer takes metrics per rollout, always the same names, and
    averages them over a batch (skyrl-gym's `get_metrics`, verl's `reward_extra_info`). Rollouts
    of one process share the counters, so each rollout carries what was counted since the one
    before it ended: one rollout's share is arbitrary, but a batch's mean is the counts per
    rollout (capacity waits per rollout, sessions opened per rollout). Takes `COUNTERS`: not for
    a process whose trainer logs them otherwise (TRL's reward functions)."""
    raw = COUNTERS.take()
    return {name: raw.get(name, 0.0) for name in PER_ROLLOUT}


def runtime_metrics(raw: Mapping[str, float]) -> dict[str, float]:
    """Logged names from merged counters: sessions opened, capacity waits, breaker rejections,
    images refused (over an answer's `content.ImageLimits`), tool latency (ms)."""
    metrics = {
        "sessions_opened": raw.get("sessions_opened", 0.0),
        "capacity_waits": raw.get("capacity_waits", 0.0),
        "capacity_wait_s": raw.get("capacity_wait_s", 0.0),
        "breaker_rejections": raw.get("breaker_rejections", 0.0),
        "images_refused": raw.get("images_refused", 0.0),
    }
    for name, count in raw.items():
        if name.startswith("tool_count/") and count:
            tool = name.removeprefix("tool_count/")
            metrics[f"tool_latency_ms/{tool}"] = 1000.0 * raw[f"tool_seconds/{tool}"] / count
    return metrics
