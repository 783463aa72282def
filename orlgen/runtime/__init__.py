"""What generated modules import at training time. Never imports the generator, and imports
`openreward` only when a session or a live task fetch needs it."""

from __future__ import annotations

from typing import Any

from .adapter import UNSET, EnvAdapter, tool_method
from .connection import ConfigError, Connection, Target
from .dataset import Column, DatasetError, DatasetSpec, build
from .mixture import mix

__all__ = [
    "UNSET",
    "Column",
    "ConfigError",
    "Connection",
    "DatasetError",
    "DatasetSpec",
    "EnvAdapter",
    "Target",
    "build_dataset",
    "mix",
    "outcome_reward",
    "tool_method",
]


def build_dataset(
    spec: DatasetSpec,
    split: str,
    *,
    num_tasks: int | None = None,
    indices: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
) -> Any:
    """A `datasets.Dataset` of task rows; tasks missing from the snapshot come from the server."""

    def fetch(split: str, start: int, stop: int) -> list[dict[str, Any]]:
        connection = Connection.resolve(spec.target, spec.env_var, base_url, api_key)
        tasks = connection.environment().get_task_range(split, start, stop)
        return [task.task_spec for task in tasks]

    return build(spec, fetch, split, num_tasks, indices)


def outcome_reward(environments: list[EnvAdapter], **_: Any) -> list[float | None]:
    """Outcome-only reward: each rollout's last non-null reward; None when nothing scored it,
    so TRL leaves the rollout out instead of counting a zero."""
    return [env.reward for env in environments]
