"""Training datasets from a snapshot's captured tasks, or live when the snapshot lacks some.

A row is what TRL hands to `reset(**row)`: `prompt` (an empty user turn, which TRL extends with
the text `reset` returns, after the env's system message when it is conversation-shaped), `split`, `task_index`, and one column per task-spec field. Columns are
decided at generation time from the snapshot's task schema, so every build of one module has
the same columns and types whatever tasks it picks:
- a field whose JSON type varies across tasks (an int here, a string there) is stored as JSON
  text, since an Arrow column has one type (its `Column` has `as_json=True`);
- a field named like a reserved column (`prompt`, `split`, `task_index`, `environment`) is
  stored under the `task_` prefix (`task_prompt`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import tasks_file
from .errors import OrlgenRuntimeError

RESERVED_COLUMNS = ("prompt", "split", "task_index", "environment")
SNAPSHOT_SUFFIX = ".snapshot.json"
TASKS_SUFFIX = ".tasks.jsonl"  # a format-2 snapshot's stored tasks, beside its interface file
RESERVED_PREFIX = "task_"
_BATCH = 500  # tasks per task_range request


class DatasetError(OrlgenRuntimeError):
    """The requested tasks cannot be turned into a dataset."""


@dataclass(frozen=True)
class Column:
    name: str  # the dataset column
    field: str  # the task-spec field it holds
    as_json: bool  # stored as JSON text (the field's type varies across tasks)


@dataclass(frozen=True)
class DatasetSpec:
    """What a generated module knows about its tasks, fixed at generation time."""

    snapshot_file: Path
    snapshot_sha256: str
    num_tasks: dict[str, int]
    columns: tuple[Column, ...]
    system_prompt: str | None = None  # a conversation-shaped env's system message, kept as a role

    def captured(self, split: str) -> dict[int, dict[str, Any]]:
        """The split's tasks stored in the snapshot, by index: from its tasks file (format 2),
        whose bytes must match the hash the interface records, or inline (format 1)."""
        data = _read(self.snapshot_file, None)
        if data.get("sha256") != self.snapshot_sha256:
            raise DatasetError(
                f"{self.snapshot_file.name} does not match the module generated from it: run `orlgen generate`"
            )
        recorded = data.get("tasks_sha256")
        if recorded is None:  # format 1, or no task stored
            captured = data.get("tasks", {}).get(split, {}).get("tasks", [])
            return {task["index"]: task["spec"] for task in captured}
        rows = _read(tasks_path(self.snapshot_file), recorded)
        return dict(rows.get(split, ()))


def tasks_path(snapshot_file: Path) -> Path:
    """`<name>.tasks.jsonl` beside `<name>.snapshot.json`."""
    return snapshot_file.with_name(snapshot_file.name.removesuffix(SNAPSHOT_SUFFIX) + TASKS_SUFFIX)


def _read(path: Path, recorded: str | None) -> Any:
    """The interface's JSON (`recorded` None), or the rows of a tasks file hashing to `recorded`."""
    try:
        stat = path.stat()
        return _parsed(path, stat.st_mtime_ns, stat.st_size, recorded)
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from exc


@functools.lru_cache(maxsize=8)
def _parsed(path: Path, mtime_ns: int, size: int, recorded: str | None) -> Any:
    """A file parsed once per version of it (a big one takes a while)."""
    data = path.read_bytes()
    return json.loads(data) if recorded is None else _rows(recorded, data)


def _rows(recorded: str, data: bytes) -> tasks_file.Rows:
    """split → [(index, spec)] of a tasks file whose bytes hash to `recorded`, read by the one
    reader `orlgen check` gives its verdict with (`tasks_file.decode`)."""
    if hashlib.sha256(data).hexdigest() != recorded:
        raise ValueError(
            "its sha256 does not match the one its snapshot records: restore it, or re-run `orlgen snapshot`"
        )
    return tasks_file.decode(data)


def build(
    spec: DatasetSpec,
    fetch: Callable[[str, int, int], list[dict[str, Any]]],
    split: str,
    num_tasks: int | None,
    indices: Sequence[int] | None,
) -> Any:
    """Rows for `indices`, or the first `num_tasks` tasks, or the whole split.

    `fetch(split, start, stop)` is called only for tasks the snapshot does not hold, once per
    contiguous run of at most `_BATCH` of them.
    """
    from datasets import Dataset

    if split not in spec.num_tasks:
        raise DatasetError(f"unknown split {split!r}; the snapshot has {sorted(spec.num_tasks)}")
    total = spec.num_tasks[split]
    if num_tasks is not None and indices is not None:
        raise DatasetError("pass num_tasks or indices, not both")
    if num_tasks is not None and num_tasks > total:
        # An error, not a warning: a shorter dataset silently changes the run (steps, epochs),
        # and a warning is lost among a trainer's logs.
        raise DatasetError(
            f"num_tasks={num_tasks}, but split {split!r} has {total} task{'s' * (total != 1)}: "
            f"pass num_tasks={total} or less (or omit it for the whole split)"
        )
    wanted = list(indices) if indices is not None else list(range(total if num_tasks is None else num_tasks))
    bad = [i for i in wanted if not 0 <= i < total]
    if bad:
        raise DatasetError(f"task indices {bad[:5]} are out of range for {split!r} ({total} tasks)")
    tasks = spec.captured(split)
    for start, stop in _runs(sorted(set(wanted) - tasks.keys())):
        for offset, task in enumerate(fetch(split, start, stop)):
            tasks[start + offset] = task
    rows: dict[str, list[Any]] = {
        "prompt": [prompt_column(spec.system_prompt) for _ in wanted],
        "split": [split] * len(wanted),
        "task_index": wanted,
    }
    for column in spec.columns:
        values = [tasks[i].get(column.field) for i in wanted]
        rows[column.name] = [_json(v) for v in values] if column.as_json else values
    try:
        return Dataset.from_dict(rows)
    except Exception as exc:  # pyarrow's errors have no common public base
        raise DatasetError(
            f"task fields do not fit the columns generated from the snapshot ({exc}); "
            "the environment's tasks changed: re-run `orlgen snapshot`"
        ) from exc


def prompt_column(system_prompt: str | None) -> list[dict[str, str]]:
    """A row's `prompt`: an empty user turn (TRL appends what `reset` returns to it), after the
    environment's system message when the snapshot recorded one."""
    system = [] if system_prompt is None else [{"role": "system", "content": system_prompt}]
    return [*system, {"role": "user", "content": ""}]


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _runs(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted indices → [start, stop) ranges of consecutive indices, each at most `_BATCH` long."""
    runs: list[tuple[int, int]] = []
    for index in indices:
        if runs and runs[-1][1] == index and index - runs[-1][0] < _BATCH:
            runs[-1] = (runs[-1][0], index + 1)
        else:
            runs.append((index, index + 1))
    return runs
