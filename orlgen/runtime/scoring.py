"""Rewards, and the scoring coverage to watch beside them.

Mean reward alone hides failures: a run where half the rollouts hit a dead server looks like a
run of a weak model. `outcome_reward` records, for every batch it scores, how many rollouts were
scored, how many failed in the environment, how many never finished, and how many tool calls and
model errors they made; `scoring_callback(trainer)` adds those numbers to TRL's logged metrics
(`orlgen/scored_fraction`, `orlgen/env_errors`, `orlgen/unfinished`, `orlgen/tool_errors`,
`orlgen/tool_calls_mean`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

METRICS = ("scored_fraction", "env_errors", "unfinished", "tool_errors", "tool_calls_mean")


class Coverage:
    """Scoring statistics accumulated since the last `drain`, for one process."""

    def __init__(self) -> None:
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

    def drain(self) -> dict[str, float]:
        """The metrics since the last drain (nothing when no rollout was scored since)."""
        with self._lock:
            if not self.rollouts:
                return {}
            metrics = {
                "scored_fraction": self.scored / self.rollouts,
                "env_errors": float(self.env_errors),
                "unfinished": float(self.unfinished),
                "tool_errors": float(self.tool_errors),
                "tool_calls_mean": self.tool_calls / self.rollouts,
            }
            self._clear()
            return metrics


COVERAGE = Coverage()
os.register_at_fork(after_in_child=COVERAGE._clear)  # a child counts its own rollouts only


def outcome_reward(environments: Sequence[Any], **_: Any) -> list[float | None]:
    """Outcome-only reward: each rollout's last non-null reward; None when nothing scored it,
    so TRL leaves the rollout out of the baseline instead of counting a zero."""
    COVERAGE.add(environments)
    return [env.reward for env in environments]


def outcome_reward_with(
    *, env_error: float | None = None, unfinished: float | None = None
) -> Callable[..., list[float | None]]:
    """`outcome_reward`, but rollouts the environment failed (`env_error`) or that never finished
    (`unfinished`) get that explicit reward instead of None. Off by default: a failure reward
    teaches the model about infrastructure, which it cannot change."""

    def outcome_reward_with_failures(environments: Sequence[Any], **kwargs: Any) -> list[float | None]:
        rewards = outcome_reward(environments, **kwargs)
        for i, env in enumerate(environments):
            if env.outcome == "env_error" and env_error is not None:
                rewards[i] = env_error
            elif env.outcome == "running" and rewards[i] is None and unfinished is not None:
                rewards[i] = unfinished
        return rewards

    return outcome_reward_with_failures


def scoring_callback(trainer: Any) -> Any:
    """A `transformers.TrainerCallback` that puts the scoring coverage into `trainer`'s logged
    metrics each step: `trainer.add_callback(scoring_callback(trainer))`."""
    from transformers import TrainerCallback

    class ScoringCoverageCallback(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            # GRPOTrainer averages `_metrics` into each log line (trl 1.16); a plain Trainer has none.
            metrics = getattr(trainer, "_metrics", None)
            if metrics is None:
                return
            for name, value in COVERAGE.drain().items():
                metrics["train"][f"orlgen/{name}"].append(value)

    return ScoringCoverageCallback()
