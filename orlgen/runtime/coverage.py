"""The scoring coverage: how many rollouts were scored, failed in the environment, never
finished, and how many tool calls and model errors they made, counted once per rollout by
whichever scorer owns it (`Episode.score`). Mean reward alone hides failures: a run where half
the rollouts hit a dead server looks like a run of a weak model. Each trainer's shim reports
these beside the reward, through the trainer's own door: TRL's through the `log_metric` its reward
functions receive (`orlgen.runtime.trl.scoring`, which counts each batch with `rollout_counts`),
skyrl-gym's through `get_metrics`, verl's through `reward_extra_info`."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from . import process


class Coverage:
    """Scoring statistics accumulated since the last `drain`, for one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clear()

    def _after_fork(self) -> None:
        """A child counts its own rollouts only, with a lock no thread of the parent holds."""
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self.rollouts = self.scored = self.env_errors = self.unfinished = self.tool_calls = self.tool_errors = 0

    def add(self, rollouts: Iterable[tuple[Any, bool]]) -> None:
        """Count `(state, scored)` pairs, as `rollout_counts` reads them."""
        raw = rollout_counts(rollouts)
        with self._lock:
            self.rollouts += int(raw["rollouts"])
            self.scored += int(raw["scored"])
            self.env_errors += int(raw["env_errors"])
            self.unfinished += int(raw["unfinished"])
            self.tool_calls += int(raw["tool_calls"])
            self.tool_errors += int(raw["tool_errors"])

    def take(self) -> dict[str, float]:
        """The raw counts since the last take (summable across processes), zeroed."""
        with self._lock:
            raw = {
                "rollouts": float(self.rollouts),
                "scored": float(self.scored),
                "env_errors": float(self.env_errors),
                "unfinished": float(self.unfinished),
                "tool_calls": float(self.tool_calls),
                "tool_errors": float(self.tool_errors),
            }
            self._clear()
        return raw

    def drain(self) -> dict[str, float]:
        """The metrics since the last drain (nothing when no rollout was scored since)."""
        return coverage_metrics(self.take())


def rollout_counts(rollouts: Iterable[tuple[Any, bool]]) -> dict[str, float]:
    """The raw counts of `(state, scored)` pairs, `state` anything with a rollout's `outcome`,
    `tool_calls` and `tool_errors` (an `EpisodeState`, an adapter): summable across processes."""
    raw = dict.fromkeys(("rollouts", "scored", "env_errors", "unfinished", "tool_calls", "tool_errors"), 0.0)
    for state, scored in rollouts:
        raw["rollouts"] += 1
        raw["scored"] += scored
        raw["env_errors"] += state.outcome == "env_error"
        raw["unfinished"] += state.outcome == "running"
        raw["tool_calls"] += state.tool_calls
        raw["tool_errors"] += state.tool_errors
    return raw


def coverage_metrics(raw: dict[str, float]) -> dict[str, float]:
    """Logged coverage from raw counts (one process's, or every rank's summed)."""
    rollouts = raw.get("rollouts", 0.0)
    if not rollouts:
        return {}
    return {
        "rollouts": rollouts,
        "scored_fraction": raw["scored"] / rollouts,
        "env_errors": raw["env_errors"],
        "unfinished": raw["unfinished"],
        "tool_errors": raw["tool_errors"],
        "tool_calls_mean": raw["tool_calls"] / rollouts,
    }


COVERAGE = process.per_process(Coverage(), Coverage._after_fork)
