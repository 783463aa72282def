"""`build_dataset`, the dataset builder every generated module has, built from its `EnvSpec` here
instead of repeated in each module: the env's tasks as rows, the same for every trainer (the
skyrl shim reshapes them, `orlgen eval` plays them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .data.dataset import build, columns, plain_rows, to_dataset
from .data.spec import EnvSpec
from .session.connection import Connection

FETCH_TIMEOUT = 120.0  # seconds for one batch of tasks


class BuildDataset(Protocol):
    """The signature of a generated module's `build_dataset` (documented on `dataset_builder`)."""

    def __call__(
        self,
        split: str = ...,
        *,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> Any: ...


def dataset_builder(spec: EnvSpec, module: str) -> BuildDataset:
    """The `build_dataset` of the generated module named `module`, whose spec is `spec` (named
    after it, so it pickles by reference like a function written in the module)."""

    def build_dataset(
        split: str = spec.default_split,
        *,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> Any:
        """A `datasets.Dataset` of tasks for GRPOTrainer's `train_dataset`.

        Tasks come from the snapshot when it holds them (no network), else from the server
        in batched `task_range` requests. Columns: `prompt`, `split`, `task_index`, and one
        per task-spec field (see `SPEC.dataset.columns`; `as_json` ones hold JSON text).

        Args:
            split: The split to draw tasks from (default: `train`, else the first split).
            num_tasks: Take the first `num_tasks` tasks (default: all of them).
            indices: Take exactly these task indices instead.
            base_url: Server to fetch tasks the snapshot lacks from.
            api_key: OpenReward API key, for catalog targets.
        """

        return build(spec.dataset, _fetcher(spec, base_url, api_key), split, num_tasks, indices)

    build_dataset.__module__ = module
    build_dataset.__qualname__ = "build_dataset"
    return build_dataset


def task_rows(spec: EnvSpec, split: str, num_tasks: int | None = None) -> list[dict[str, Any]]:
    """The rows `build_dataset(split, num_tasks=...)` holds, as dicts, read without `datasets`
    when Arrow would return them unchanged (`plain_rows`): for a command that plays a few
    tasks (`orlgen eval`), not for training, which takes the `Dataset`."""
    table = columns(spec.dataset, _fetcher(spec, None, None), split, num_tasks, None)
    rows = plain_rows(table)
    return rows if rows is not None else [dict(row) for row in to_dataset(table)]


def _fetcher(spec: EnvSpec, base_url: str | None, api_key: str | None) -> Callable[[str, int, int], list[Any]]:
    """Fetches the tasks a snapshot lacks from the env's server, a batch per call."""

    def fetch(split: str, start: int, stop: int) -> list[dict[str, Any]]:
        connection = Connection.resolve(spec.target, spec.env_var, base_url, api_key)
        return connection.run(lambda env: env.get_task_range(split, start, stop), timeout=FETCH_TIMEOUT)

    return fetch
