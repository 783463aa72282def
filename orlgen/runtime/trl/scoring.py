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

Metrics. Mean reward alone hides failures: a run where half the rollouts hit a dead server
looks like a run of a weak model. TRL 1.16's `GRPOTrainer` (and `RLOOTrainer`) hands every reward
function two public hooks, `log_metric(name, value)` (a scalar in the step's log, averaged over
the processes) and `log_extra(column, values)` (a column of the completions table wandb and
trackio show); env-owned rewards (`get_reward()`) get neither. So orlgen's reward functions
(every one here, and `scoring_metrics`) log the batch they see: how many rollouts were scored,
failed in the environment, never finished, their tool calls and model errors
(`orlgen/scored_fraction`, `orlgen/env_errors`, `orlgen/unfinished`, `orlgen/tool_errors`,
`orlgen/tool_calls_mean`), the runtime's counters since the last batch (`orlgen/capacity_waits`,
`orlgen/capacity_wait_s`, `orlgen/breaker_rejections`, `orlgen/tool_latency_ms/<tool>`, ...), all
summed over every rank first so each rank logs the run's numbers, and per rollout its
`orlgen/outcome`, `orlgen/error`, `orlgen/tool_calls` and `orlgen/tool_errors` as table columns.
A batch is logged once, by the first of orlgen's functions that sees it. A run whose rollouts
are scored by the adapters' own `get_reward()` alone (a module's `reward_funcs` as generated)
adds `scoring_metrics`, which scores nothing: TRL gives every reward function a column, and
this one's is empty (`rewards/scoring_metrics/mean` is None; reward and advantages unchanged).
`AsyncGRPOTrainer` gives reward functions no hooks: there the numbers stay in
`orlgen.runtime.COVERAGE` and the runtime's counters, unlogged.
"""

from __future__ import annotations

import functools
import logging
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

from .. import process
from ..coverage import coverage_metrics, rollout_counts
from ..session.metrics import COUNTERS, gather, runtime_metrics
from .adapter import EnvAdapter

logger = logging.getLogger("orlgen")

F = TypeVar("F", bound=Callable[..., Any])


def _logged(scorer: F) -> F:
    """`scorer`, then its batch's metrics through TRL's log hooks, when the caller passed them."""

    @functools.wraps(scorer)
    def logged(
        environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> Any:
        result = scorer(environments, completions, **kwargs)
        if environments is not None:
            _log_batch(environments, kwargs)
        return result

    return cast(F, logged)


@_logged
def outcome_reward(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """Outcome-only reward: each rollout's last non-null reward; None when nothing scored it,
    so TRL leaves the rollout out of the baseline instead of counting a zero."""
    return _scored("outcome_reward", "last", environments, completions)


@_logged
def summed_reward(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """Summed reward: the sum of each rollout's non-null step rewards; None when none scored it.
    For envs whose step rewards add up to the episode's score (`[None, None, 0.005, 0.0]` sums
    to 0.005, where the outcome is 0.0)."""
    return _scored("summed_reward", "sum", environments, completions)


@_logged
def submit_final_message(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[None]:
    """Not a score: hands each unfinished rollout's final assistant message to its env's
    terminal tool, which records the reward that `get_reward()` then returns. Returns None for
    every rollout (TRL logs an empty `submit_final_message` column)."""
    if environments is None:
        _warn_no_environments()
    return _submitted(environments, completions)


@_logged
def scoring_metrics(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[None]:
    """Not a score: logs orlgen's metrics for the batch (see this module's docstring) where no
    other function of orlgen's is among the reward functions, as when the adapters' `get_reward()`
    scores: `reward_funcs=[*module.reward_funcs, scoring_metrics]`. Returns None for every rollout
    (TRL shows an empty `scoring_metrics` column). Hands unfinished rollouts' final messages to
    their env's terminal tool first, as every scorer here does, so it may sit anywhere in the list."""
    return _submitted(environments, completions)


def _submitted(environments: Sequence[Any] | None, completions: Sequence[Any] | None) -> list[None]:
    """The terminal-tool step for the batch (when TRL passed its environments), and no score."""
    if environments is None:
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
            "reward='sum', e.g. functools.partial(MyEnv, reward='sum'); or record the rule in the snapshot)"
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


# The batch logged last. TRL hands every reward function of a batch the same `environments` list,
# a new list each batch; held here so its id is never a later batch's.
_last_batch: list[Sequence[Any]] = process.per_process([])

# Each rollout's columns in TRL's completions table (None for an environment that is not orlgen's).
_EXTRAS: Mapping[str, Callable[[EnvAdapter], Any]] = {
    "outcome": lambda env: env.outcome,
    "error": lambda env: env.error,
    "tool_calls": lambda env: env.tool_calls,
    "tool_errors": lambda env: env.tool_errors,
}


def _log_batch(environments: Sequence[Any], hooks: Mapping[str, Any]) -> None:
    """The batch's scoring coverage and the runtime's counters since the last batch, summed over
    every rank, through TRL's `log_metric`; each rollout's outcome and counts through `log_extra`.
    Nothing without the hooks (orlgen's rollout loop, `AsyncGRPOTrainer`), nothing for a batch
    already logged. "Scored" is the rollout's reward by its env's rule, what `get_reward()` gives."""
    log_metric, log_extra = hooks.get("log_metric"), hooks.get("log_extra")
    if log_metric is None or log_extra is None or (_last_batch and _last_batch[0] is environments):
        return
    _last_batch[:] = [environments]
    ours = [env for env in environments if isinstance(env, EnvAdapter)]
    counts = rollout_counts((env, env._episode.standing_reward() is not None) for env in ours)
    raw = {f"coverage/{name}": value for name, value in counts.items()} | COUNTERS.take()
    # Every rank runs the same reward functions at the same point: the gather is a collective each
    # joins, and each then logs the same run-wide numbers (so TRL's mean over ranks is the sum).
    total = gather(raw, _processes())
    logged = coverage_metrics(
        {name[len("coverage/") :]: v for name, v in total.items() if name.startswith("coverage/")}
    )
    if logged:  # a batch with no rollout of orlgen's logs nothing
        logged |= runtime_metrics(total)
    for name, value in logged.items():
        log_metric(f"orlgen/{name}", value)
    for column, read in _EXTRAS.items():
        log_extra(f"orlgen/{column}", [read(env) if isinstance(env, EnvAdapter) else None for env in environments])


def _processes() -> Any:
    """accelerate's state of the job the trainer runs in (how many processes); None where nothing
    imported accelerate (then no trainer set a job of several processes up)."""
    accelerate = sys.modules.get("accelerate")
    return None if accelerate is None else accelerate.PartialState()


def _logs_metrics(func: Any) -> bool:
    """Whether `func`, a reward function, is one of orlgen's (each logs its batch's metrics)."""
    while isinstance(func, functools.partial):
        func = func.func
    return getattr(func, "__module__", None) == __name__


def scoring_callback(trainer: Any) -> Any:
    """Deprecated: orlgen's metrics reach TRL through its reward functions' `log_metric` (see
    this module's docstring), so this callback writes nothing to the trainer. What it still does:
    when training starts, one warning if none of `trainer.reward_funcs` is orlgen's (add
    `scoring_metrics`), so a run that relied on it does not lose its metrics silently."""
    warnings.warn(
        "scoring_callback is deprecated: orlgen's reward functions log its metrics through TRL's log_metric; "
        "add orlgen.runtime.scoring_metrics to reward_funcs where none of them is there",
        DeprecationWarning,
        stacklevel=2,
    )
    from transformers import TrainerCallback

    class ScoringCoverageCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if not any(_logs_metrics(func) for func in getattr(trainer, "reward_funcs", None) or ()):
                logger.warning(
                    "no reward function of orlgen's among the trainer's reward_funcs: orlgen's metrics "
                    "(orlgen/scored_fraction, ...) are not logged; add orlgen.runtime.scoring_metrics to reward_funcs"
                )

    return ScoringCoverageCallback()
