"""`RewardRule`: how a rollout's step rewards become its one reward.

An ORS env gives a reward with every step; what a trainer optimises is one number per rollout.
The rule is part of the env as captured (the snapshot records it, `orlgen diff` reports a change
as `REWARD_RULE_CHANGED`), so every trainer's module and `orlgen eval` compute the same number
from the same steps. The vocabulary is closed on purpose, the reductions RL recipes use (the
OpenReward cookbook, slime/miles): a user-written wrapper would be invisible to the snapshot, the
diff and eval, and their numbers would silently disagree with training's.

- `reduce`: `last` (the last non-null step reward), `sum`, `mean`, `max` or `min` of the non-null
  step rewards. `outcome` and `summed`, the names before orlgen 0.3, read as `last` and `sum`.
- `unfinished`: the reward of a rollout that ran and did not finish (the turn cap reached, no
  submit), instead of the reduction. None: such a rollout is reduced like any other.
- `clamp`: `(lo, hi)` bounds of the result.

A rollout the environment failed is unscored (None), never a silent number, whatever the rule;
so is one that finished with no step reward at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

Reduction = Literal["last", "sum", "mean", "max", "min"]
REDUCTIONS: tuple[str, ...] = get_args(Reduction)
ALIASES = {"outcome": "last", "summed": "sum"}  # the rule's names before orlgen 0.3


@dataclass(frozen=True)
class RewardRule:
    """The env's reward rule (see the module's docstring); `RewardRule()` is the default, `last`.

    Invalid values raise ValueError in one line: an unknown reduction, a number that is not
    finite, a clamp whose low bound is above its high one, or an unfinished reward the clamp
    would move (the clamp bounds what the reduction gives; a penalty outside it is a mistake)."""

    reduce: Reduction = "last"
    unfinished: float | None = None
    clamp: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        reduce = ALIASES.get(self.reduce, self.reduce)
        if reduce not in REDUCTIONS:
            raise ValueError(f"reward reduction must be one of {', '.join(REDUCTIONS)}, not {self.reduce!r}")
        object.__setattr__(self, "reduce", reduce)
        if self.unfinished is not None:
            object.__setattr__(self, "unfinished", _finite("unfinished reward", self.unfinished))
        if self.clamp is not None:
            low, high = (_finite("reward clamp bound", bound) for bound in self.clamp)
            if low > high:
                raise ValueError(f"reward clamp {low}:{high} has its low bound above its high one")
            object.__setattr__(self, "clamp", (low, high))
            if self.unfinished is not None and not low <= self.unfinished <= high:
                raise ValueError(f"unfinished reward {self.unfinished} lies outside the reward clamp {low}:{high}")

    @classmethod
    def of(cls, rule: RewardRule | str) -> RewardRule:
        """A rule, or a reduction's name as the rule of that reduction alone."""
        return rule if isinstance(rule, RewardRule) else cls(rule)  # type: ignore[arg-type]

    def apply(self, rewards: Sequence[float | None], *, ran: bool, finished: bool, failed: bool) -> float | None:
        """The rollout's reward from its step rewards (None where a step gave none). `ran`: a
        session was opened for it; `finished`: the env ended it; `failed`: the env failed it."""
        if failed:
            return None
        if ran and not finished and self.unfinished is not None:
            return self.unfinished
        steps = [reward for reward in rewards if reward is not None]
        if not steps:
            return None
        reward = _REDUCE[self.reduce](steps)
        if self.clamp is not None:
            reward = min(max(reward, self.clamp[0]), self.clamp[1])
        return reward

    def describe(self) -> str:
        """The rule in a sentence's words: `the mean of the non-null step rewards; 0.0 for a
        rollout that ran and did not finish; clamped to [0.0, 1.0]`."""
        words = [_WORDS[self.reduce]]
        if self.unfinished is not None:
            words.append(f"{self.unfinished!r} for a rollout that ran and did not finish")
        if self.clamp is not None:
            words.append(f"clamped to [{self.clamp[0]!r}, {self.clamp[1]!r}]")
        return "; ".join(words)

    def __str__(self) -> str:
        """The rule as a reviewer reads it: `mean, unfinished -1.0, clamp 0.0:1.0`."""
        words: list[str] = [self.reduce]
        if self.unfinished is not None:
            words.append(f"unfinished {self.unfinished!r}")
        if self.clamp is not None:
            words.append(f"clamp {self.clamp[0]!r}:{self.clamp[1]!r}")
        return ", ".join(words)


_WORDS = {
    "last": "the last non-null step reward",
    "sum": "the sum of the non-null step rewards",
    "mean": "the mean of the non-null step rewards",
    "max": "the largest non-null step reward",
    "min": "the smallest non-null step reward",
}
_REDUCE: dict[str, Callable[[list[float]], float]] = {
    "last": lambda steps: steps[-1],
    "sum": sum,
    "mean": lambda steps: sum(steps) / len(steps),
    "max": max,
    "min": min,
}


def _finite(what: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, not {value!r}")
    return float(value)
