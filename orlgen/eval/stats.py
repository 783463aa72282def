"""The numbers of the eval table, as pure functions of finished rollouts.

Conventions, chosen so that no number hides a failure:
- mean reward (± standard error of the mean) is over *scored* rollouts only; the coverage line
  says how many were not scored and why.
- pass@1, pass@k and pass^k count an unscored rollout as not passed; pass@k is the unbiased
  estimator of Chen et al. (2021), `1 - C(n-c, k) / C(n, k)` per task, averaged over tasks; pass^k
  (every one of k rollouts passes, tau-bench's measure of consistency) is `C(c, k) / C(n, k)`.
- a GRPO group is the k rollouts of one task; its rewards are "all equal" when its scored rewards
  take at most one value (one scored rollout, or none, teaches nothing either). Such groups give
  every rollout an advantage of zero: they train nothing.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .rollout import Rollout


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k rollouts drawn without replacement from n, c of which
    passed, passes."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, not n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all of k rollouts drawn without replacement from n, c of which passed, pass."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n, not n={n}, c={c}, k={k}")
    return math.comb(c, k) / math.comb(n, k)


def mean_stderr(values: Sequence[float]) -> tuple[float | None, float | None]:
    """Mean and standard error of the mean (sample standard deviation / sqrt(n)); the error is
    None for fewer than two values, both None for none."""
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def equal_groups(groups: Iterable[Sequence[float | None]]) -> tuple[int, int]:
    """(groups whose scored rewards are all equal, groups)."""
    groups = list(groups)
    equal = sum(len({reward for reward in group if reward is not None}) <= 1 for group in groups)
    return equal, len(groups)


def default_threshold(rewards: Iterable[float | None]) -> float:
    """The pass threshold when none is given: 1.0, or the largest reward seen when the
    environment pays more than 1.0."""
    return max([1.0, *(reward for reward in rewards if reward is not None)])


@dataclass(frozen=True)
class TaskStats:
    """One task's k rollouts: the GRPO group a training step would draw for it."""

    env: str
    split: str
    task_index: int
    rewards: list[float | None]
    mean: float | None  # over the scored rollouts
    passes: int
    equal: bool  # its scored rewards take at most one value: the group teaches nothing

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SplitStats:
    env: str
    split: str
    threshold: float
    k: int
    tasks: int = 0
    rollouts: int = 0
    scored: int = 0
    unscored: dict[str, int] = field(default_factory=dict)
    mean_reward: float | None = None
    reward_stderr: float | None = None
    pass_at_1: float | None = None
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    tool_calls_per_rollout: float = 0.0
    tool_error_rate: float | None = None
    mean_turns: float = 0.0
    wall_s: float = 0.0
    equal_groups: int = 0
    groups: int = 0
    per_task: list[TaskStats] = field(default_factory=list)

    @property
    def equal_group_share(self) -> float | None:
        return self.equal_groups / self.groups if self.groups else None

    def as_dict(self) -> dict[str, Any]:
        numbers = {name: value for name, value in self.__dict__.items() if name != "per_task"}
        return {**numbers, "equal_group_share": self.equal_group_share}


def summarize(rollouts: Sequence[Rollout], k: int, threshold: float | None) -> list[SplitStats]:
    """One `SplitStats` per (environment, split), in order of first appearance."""
    by_split: dict[tuple[str, str], list[Rollout]] = defaultdict(list)
    for rollout in rollouts:
        by_split[(rollout.env, rollout.split)].append(rollout)
    per_env_rewards: dict[str, list[float | None]] = defaultdict(list)
    for rollout in rollouts:
        per_env_rewards[rollout.env].append(rollout.reward)
    return [
        _split(env, split, group, k, threshold if threshold is not None else default_threshold(per_env_rewards[env]))
        for (env, split), group in by_split.items()
    ]


def _split(env: str, split: str, rollouts: list[Rollout], k: int, threshold: float) -> SplitStats:
    tasks: dict[int, list[Rollout]] = defaultdict(list)
    for rollout in sorted(rollouts, key=lambda r: (r.task_index, r.sample)):
        tasks[rollout.task_index].append(rollout)
    scored = [rollout.reward for rollout in rollouts if rollout.reward is not None]
    mean, stderr = mean_stderr(scored)
    passes = [[_passed(rollout, threshold) for rollout in group] for group in tasks.values()]
    calls = sum(rollout.tool_calls for rollout in rollouts)
    equal, groups = equal_groups([rollout.reward for rollout in group] for group in tasks.values())
    return SplitStats(
        env=env,
        split=split,
        threshold=threshold,
        k=k,
        tasks=len(tasks),
        rollouts=len(rollouts),
        scored=len(scored),
        unscored=dict(sorted(Counter(r.unscored_reason for r in rollouts if r.unscored_reason).items())),
        mean_reward=mean,
        reward_stderr=stderr,
        pass_at_1=_mean([pass_at_k(len(p), sum(p), 1) for p in passes]),
        pass_at_k=_mean([pass_at_k(len(p), sum(p), min(k, len(p))) for p in passes]),
        pass_hat_k=_mean([pass_hat_k(len(p), sum(p), min(k, len(p))) for p in passes]),
        tool_calls_per_rollout=calls / len(rollouts),
        tool_error_rate=sum(rollout.tool_errors for rollout in rollouts) / calls if calls else None,
        mean_turns=sum(rollout.turns for rollout in rollouts) / len(rollouts),
        wall_s=max(r.ended for r in rollouts) - min(r.started for r in rollouts),
        equal_groups=equal,
        groups=groups,
        per_task=[_task(env, split, index, group, threshold) for index, group in sorted(tasks.items())],
    )


def _task(env: str, split: str, index: int, rollouts: list[Rollout], threshold: float) -> TaskStats:
    rewards = [rollout.reward for rollout in rollouts]
    mean, _ = mean_stderr([reward for reward in rewards if reward is not None])
    equal, _ = equal_groups([rewards])
    passes = sum(_passed(rollout, threshold) for rollout in rollouts)
    return TaskStats(env, split, index, rewards, mean, passes, equal == 1)


def task_filter(stats: Sequence[SplitStats], sizes: dict[tuple[str, str], int]) -> dict[str, dict[str, Any]]:
    """For `--emit-task-filter`: per environment and split, the tasks whose rollouts all scored
    the same (`exclude`) and every other task of the split (`indices`, what
    `build_dataset(split, indices=...)` takes). `sizes` holds each split's task count: tasks the
    run did not evaluate are kept, as nothing says they teach nothing."""
    out: dict[str, dict[str, Any]] = {}
    for split in stats:
        exclude = [task.task_index for task in split.per_task if task.equal]
        keep = sorted(set(range(sizes[(split.env, split.split)])) - set(exclude))
        out.setdefault(split.env, {})[split.split] = {"exclude": exclude, "indices": keep}
    return out


def _passed(rollout: Rollout, threshold: float) -> bool:
    return rollout.reward is not None and rollout.reward >= threshold


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
