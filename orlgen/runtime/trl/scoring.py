"""Rewards, and the scoring coverage to watch beside them.

Who scores a rollout. Every adapter owns its reward through `get_reward()`, which both of TRL's
trainers call and log in a column named after the adapter class, so a generated module's
`reward_funcs` holds no scorer (`[]`, or `[submit_final_message]` for an env with a terminal
tool). The reward functions here are for `GRPOTrainer` users who want another aggregation in
`reward_funcs` (`summed_reward`, `outcome_reward_with(...)`). A rollout is scored once: the first
scorer that reads it owns it and every other one returns None for it (None is left out of TRL's
sum), and GRPOTrainer runs `reward_funcs` before the `get_reward` column, so a reward function
passed explicitly wins and nothing is counted twice.

Terminal tools. An env with a `@terminal` tool grades the model's final plain message. Under
`GRPOTrainer` reward functions receive `completions` and `environments`, so
`submit_final_message` (and every scorer here) first hands each unfinished rollout's last
assistant message to its env's terminal tool. `AsyncGRPOTrainer` gives reward functions no
environments and `get_reward()` no completion: there the final message cannot reach the env, and
such rollouts stay unscored unless a tool call scored them (see docs/training.md).

Mean reward alone hides failures: a run where half the rollouts hit a dead server looks like a
run of a weak model. Whoever scores a rollout (`get_reward` or a reward function) records how many rollouts were
scored, how many failed in the environment, how many never finished, and how many tool calls and
model errors they made; `scoring_callback(trainer)` adds those numbers to TRL's logged metrics
(`orlgen/scored_fraction`, `orlgen/env_errors`, `orlgen/unfinished`, `orlgen/tool_errors`,
`orlgen/tool_calls_mean`), with the runtime's counters beside them (`orlgen/capacity_waits`,
`orlgen/capacity_wait_s`, `orlgen/breaker_rejections`, `orlgen/tool_latency_ms/<tool>`), summed
over every rank first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import process
from ..coverage import COVERAGE, coverage_metrics

logger = logging.getLogger("orlgen")


def outcome_reward(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """Outcome-only reward: each rollout's last non-null reward; None when nothing scored it,
    so TRL leaves the rollout out of the baseline instead of counting a zero."""
    return _scored("outcome_reward", "outcome", environments, completions)


def summed_reward(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """Summed reward: the sum of each rollout's non-null step rewards; None when none scored it.
    For envs whose step rewards add up to the episode's score (`[None, None, 0.005, 0.0]` sums
    to 0.005, where the outcome is 0.0)."""
    return _scored("summed_reward", "summed", environments, completions)


def submit_final_message(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[None]:
    """Not a score: hands each unfinished rollout's final assistant message to its env's
    terminal tool, which records the reward that `get_reward()` then returns. Returns None for
    every rollout (TRL logs an empty `submit_final_message` column)."""
    if environments is None:
        _warn_no_environments()
        return [None] * len(completions or ())
    _submit_all(environments, completions)
    return [None] * len(environments)


def outcome_reward_with(
    *, env_error: float | None = None, unfinished: float | None = None
) -> Callable[..., list[float | None]]:
    """`outcome_reward`, but rollouts the environment failed (`env_error`) or that never finished
    (`unfinished`) get that explicit reward instead of None. Off by default: a failure reward
    teaches the model about infrastructure, which it cannot change."""

    def outcome_reward_with_failures(environments: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        rewards = outcome_reward(environments, **kwargs)
        for i, env in enumerate(environments or ()):
            if env._episode.scored_by != "outcome_reward":
                continue  # another scorer owns this rollout
            if env.outcome == "env_error" and env_error is not None:
                rewards[i] = env_error
            elif env.outcome == "running" and rewards[i] is None and unfinished is not None:
                rewards[i] = unfinished
        return rewards

    return outcome_reward_with_failures


def _scored(
    scorer: str, aggregate: str, environments: Sequence[Any] | None, completions: Sequence[Any] | None
) -> list[float | None]:
    if environments is None:
        raise TypeError(
            f"{scorer} needs `environments`, which AsyncGRPOTrainer does not pass to reward functions: "
            "the adapter scores itself there through get_reward() (for a summed reward, build it with "
            "reward='summed', e.g. functools.partial(MyEnv, reward='summed'))"
        )
    _submit_all(environments, completions)
    return [env._score(scorer, aggregate) for env in environments]


def _submit_all(environments: Sequence[Any], completions: Sequence[Any] | None) -> None:
    """The terminal-tool step, for every rollout whose env declares one and has not finished."""
    if completions is None:
        return
    pending = [
        (env, message)
        for env, completion in zip(environments, completions, strict=False)
        if getattr(getattr(env, "spec", None), "terminal_tool", None) is not None
        and not env.finished
        and (message := final_message(completion)) is not None
    ]
    if len(pending) == 1:
        pending[0][0]._submit_final_message(pending[0][1])
    elif pending:
        # Together: each waits for the env's grader, and the batch would otherwise wait for their sum.
        with ThreadPoolExecutor(max_workers=min(32, len(pending)), thread_name_prefix="orlgen-terminal") as pool:
            list(pool.map(lambda job: job[0]._submit_final_message(job[1]), pending))


def final_message(completion: Any) -> str | None:
    """The text of a completion's final plain assistant message; None when the rollout ended
    on a tool call or a tool result (the model never answered)."""
    if isinstance(completion, str):
        return completion
    if not completion:
        return None
    last = completion[-1]
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content") or ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if part.get("type") == "text")
    return content


_warned: list[bool] = process.per_process([])


def _warn_no_environments() -> None:
    if not _warned:
        _warned.append(True)
        logger.warning(
            "submit_final_message got no environments (AsyncGRPOTrainer passes none): the terminal tool "
            "cannot see the final message there; rollouts are scored only by their tool calls"
        )


def scoring_callback(trainer: Any) -> Any:
    """A `transformers.TrainerCallback` that puts the scoring coverage and orlgen's runtime
    counters (capacity waits, breaker rejections, tool latency: `orlgen.runtime.session.metrics`) into
    `trainer`'s logged metrics each step: `trainer.add_callback(scoring_callback(trainer))`.

    On several ranks every rank's counts are summed first (accelerate's `gather_object`, a
    collective each rank joins at the same step end, as TRL gathers its tool counts), so the
    log shows the run's numbers, not rank 0's; the trainer writes the main process's log."""
    from transformers import TrainerCallback

    from ..session.metrics import COUNTERS, gather, runtime_metrics

    class ScoringCoverageCallback(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            # GRPOTrainer averages `_metrics` into each log line (trl 1.16); a plain Trainer has none.
            metrics = getattr(trainer, "_metrics", None)
            if metrics is None:
                return
            raw = {f"coverage/{name}": value for name, value in COVERAGE.take().items()} | COUNTERS.take()
            total = gather(raw, getattr(trainer, "accelerator", None))
            coverage = {name.removeprefix("coverage/"): v for name, v in total.items() if name.startswith("coverage/")}
            logged = coverage_metrics(coverage)
            if logged:  # a step that scored nothing logs nothing, as before
                logged |= runtime_metrics(total)
            for name, value in logged.items():
                metrics["train"][f"orlgen/{name}"].append(value)

    return ScoringCoverageCallback()
