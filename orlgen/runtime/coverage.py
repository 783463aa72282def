"""The scoring coverage: how many rollouts were scored, failed in the environment, never
finished, and how many tool calls and model errors they made, counted once per rollout by
whichever scorer owns it (`Episode.score`). Mean reward alone hides failures: a run where half
the rollouts hit a dead server looks like a run of a weak model. Each trainer's shim reports
these beside the reward (TRL's through `scoring_callback`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
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

    def add(self, environments: Sequence[Any]) -> None:
        with self._lock:
            for env in environments:
                self.rollouts += 1
                self.scored += env.reward is not None
                self.env_errors += env.outcome == "env_error"
                self.unfinished += env.outcome == "running"
                self.tool_calls += env.tool_calls
                self.tool_errors += env.tool_errors

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
