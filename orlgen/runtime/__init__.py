"""What generated modules import at training time. Never imports the generator, and imports
`openreward` only when a session or a live task fetch needs it."""

from __future__ import annotations

from typing import Any

from .adapter import UNSET, DriftError, EnvAdapter, tool_method
from .budget import set_max_sessions
from .connection import CallTimeout, ConfigError, Connection, Target
from .dataset import Column, DatasetError, DatasetSpec, build
from .mixture import mix
from .scoring import (
    COVERAGE,
    final_message,
    outcome_reward,
    outcome_reward_with,
    scoring_callback,
    submit_final_message,
    summed_reward,
)

__all__ = [
    "COVERAGE",
    "UNSET",
    "CallTimeout",
    "Column",
    "ConfigError",
    "Connection",
    "DatasetError",
    "DatasetSpec",
    "DriftError",
    "EnvAdapter",
    "Target",
    "build_dataset",
    "final_message",
    "mix",
    "outcome_reward",
    "outcome_reward_with",
    "scoring_callback",
    "set_max_sessions",
    "submit_final_message",
    "summed_reward",
    "tool_method",
]


FETCH_TIMEOUT = 120.0  # seconds for one batch of tasks


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
        tasks = connection.run(lambda env: env.get_task_range(split, start, stop), timeout=FETCH_TIMEOUT)
        return [task.task_spec for task in tasks]

    return build(spec, fetch, split, num_tasks, indices)
