"""Group scores: an environment that implements ORS `score_group` (SDK >= 0.1.157) scores a GRPO
group's completions of one task against each other, in one request per group.

`group_reward` is a GRPOTrainer reward function, offered by a generated module whose environment
advertises `supports_score_group` (`SPEC.score_group`). TRL hands reward functions the batch in
order, each prompt's `num_generations` completions side by side; the adapters that played them
name their task, so consecutive rollouts of one task are one group. Each group is sent, as
`{"candidates": [{"messages": [...]}]}`, over the session of one of its rollouts (still open
when reward functions run: `get_reward` ends it afterwards), which already holds the task, its
setup and its secrets. A candidate is the rollout's final assistant message (the judges' default
view; an answer that ended on a tool call is an empty message). The comparative score comes beside the pointwise one (`get_reward`), never instead: a
group the env cannot score is None for TRL (left out of the sum), with one warning.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from .scoring import final_message

logger = logging.getLogger("orlgen")


def group_reward(
    environments: Sequence[Any] | None = None, completions: Sequence[Any] | None = None, **_: Any
) -> list[float | None]:
    """The env's comparative score of each completion within its group (`/score_group`)."""
    if environments is None:
        raise TypeError("group_reward needs `environments`, which AsyncGRPOTrainer does not pass to reward functions")
    texts = [final_message(completion) or "" for completion in (completions or [None] * len(environments))]
    rewards: list[float | None] = [None] * len(environments)
    for group in _groups(environments):
        scores = _score(environments, texts, group)
        for i, score in zip(group, scores, strict=True):
            rewards[i] = score
    return rewards


def _groups(environments: Sequence[Any]) -> list[list[int]]:
    """Runs of consecutive rollouts that played the same task."""
    groups: list[list[int]] = []
    for i, env in enumerate(environments):
        task = env._episode.task
        if groups and task is not None and environments[groups[-1][0]]._episode.task == task:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _score(environments: Sequence[Any], texts: list[str], group: list[int]) -> list[float | None]:
    """One `/score_group` request for `group`, over the first of its rollouts' open sessions."""
    holder = next((environments[i]._episode for i in group if environments[i]._episode.open), None)
    if holder is None:
        logger.warning("group_reward: no open session for a group of %d rollouts: left unscored", len(group))
        return [None] * len(group)
    candidates = [
        {"messages": [{"role": "assistant", "blocks": [{"type": "text", "text": texts[i]}]}], "metadata": None}
        for i in group
    ]
    try:
        scores = holder.score_group(candidates)
    except Exception as exc:  # the env's judge failed, or the server lacks the route: unscored
        logger.warning("group_reward: the environment could not score a group of %d: %s", len(group), exc)
        return [None] * len(group)
    return list(scores)
