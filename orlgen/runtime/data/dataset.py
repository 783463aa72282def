"""Training datasets from a snapshot's captured tasks, or live when the snapshot lacks some.

A row is what TRL hands to `reset(**row)`: `prompt` (an empty user turn, which TRL extends with
the text `reset` returns, after the env's system message when it is conversation-shaped), `split`, `task_index`, and one column per task-spec field. Columns are
decided at generation time from the snapshot's task schema, so every build of one module has
the same columns and types whatever tasks it picks:
- a field whose JSON type varies across tasks (an int here, a string there), or that holds dicts
  whose keys vary (a struct column would give each dict every other one's keys, as None), is
  stored as JSON text, since an Arrow column has one type (its `Column` has `as_json=True`);
- a field named like a column any trainer adds (`prompt`, `split`, `task_index`, `environment`
  here; the plan's `reserved.TRAINER_COLUMNS` for all) is stored under the `task_` prefix
  (`task_prompt`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import OrlgenRuntimeError
from . import tasks_file

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
    as_json: bool  # stored as JSON text (the field's type, or its dicts' keys, vary across tasks)


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
    """Rows for `indices`, or the first `num_tasks` tasks, or the whole split, as a
    `datasets.Dataset` (`columns` says which tasks and how they are fetched)."""
    return to_dataset(columns(spec, fetch, split, num_tasks, indices))


def to_dataset(table: dict[str, list[Any]]) -> Any:
    from datasets import Dataset

    try:
        return Dataset.from_dict(table)
    except Exception as exc:  # pyarrow's errors have no common public base
        raise DatasetError(
            f"task fields do not fit the columns generated from the snapshot ({exc}); "
            "the environment's tasks changed: re-run `orlgen snapshot`"
        ) from exc


def columns(
    spec: DatasetSpec,
    fetch: Callable[[str, int, int], list[dict[str, Any]]],
    split: str,
    num_tasks: int | None,
    indices: Sequence[int] | None,
) -> dict[str, list[Any]]:
    """The dataset's columns for `indices`, or the first `num_tasks` tasks, or the whole split.

    `fetch(split, start, stop)` is called only for tasks the snapshot does not hold, once per
    contiguous run of at most `_BATCH` of them.
    """
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
    table: dict[str, list[Any]] = {
        "prompt": [prompt_column(spec.system_prompt) for _ in wanted],
        "split": [split] * len(wanted),
        "task_index": wanted,
    }
    for column in spec.columns:
        values = [tasks[i].get(column.field) for i in wanted]
        table[column.name] = [_json(v) for v in values] if column.as_json else _kept_whole(column.field, values)
    return table


def _kept_whole(field: str, values: list[Any]) -> list[Any]:
    """`values` for an Arrow column, refused when Arrow would change them: a dict of a task
    fetched live may have keys the snapshot's tasks never had (a sampled split), and one struct
    column would give every other dict those keys, as None. JSON text would have kept them, but a
    column's type is fixed at generation time."""
    shape = _shape(values)
    if shape is not None and any(_unified(value, shape) != value for value in values):
        raise DatasetError(
            f"task field {field!r} holds dicts whose keys differ between tasks, which its column (a struct, "
            "planned from the snapshot's tasks) would fill with None: re-run `orlgen snapshot` (`--tasks all` "
            "for a sampled split) so the field is stored as JSON text"
        )
    return values


_INT64 = 2**63
_SCALARS = (str, int, float, bool)


def plain_rows(table: dict[str, list[Any]]) -> list[dict[str, Any]] | None:
    """The rows `to_dataset(table)` would hand back, without importing `datasets` (a second of
    start-up for a command that reads a few rows). Arrow gives one type to a column, so what
    comes back is unified: a dict gains, as None, the keys other rows' dicts have at that place
    (in the order they first appear), a list's items are unified likewise. That is done here
    where it is certain, for JSON-shaped values whose every place holds one scalar type (str,
    int within int64, float or bool), dicts or lists; None for anything else (an int beside a
    float, an empty dict), which only Arrow can say how it converts."""
    shapes = {name: _shape(values) for name, values in table.items()}
    if any(shape is None for shape in shapes.values()):
        return None
    return [
        {name: _unified(value, shapes[name]) for name, value in zip(table, row, strict=True)}
        for row in zip(*table.values(), strict=True)
    ]


def _shape(values: list[Any]) -> Any:
    """The one Arrow type of `values` in short: `"scalar"`, `("list", item shape)` or
    `("struct", {key: shape})`; None when it is not certain."""
    present = [value for value in values if value is not None]
    kinds = {type(value) for value in present}
    if len(kinds) > 1:
        return None
    kind: type = kinds.pop() if kinds else str
    if kind in _SCALARS:
        fits = kind is not int or all(-_INT64 <= value < _INT64 for value in present)
        return "scalar" if fits else None
    if kind is list:
        item = _shape([item for value in present for item in value])
        return None if item is None else ("list", item)
    if kind is dict and all(present):
        keys = list(dict.fromkeys(key for value in present for key in value))
        fields = {key: _shape([value.get(key) for value in present]) for key in keys}
        return None if any(field is None for field in fields.values()) else ("struct", fields)
    return None


def _unified(value: Any, shape: Any) -> Any:
    if value is None or shape == "scalar":
        return value
    kind, inner = shape
    if kind == "list":
        return [_unified(item, inner) for item in value]
    return {key: _unified(value.get(key), field) for key, field in inner.items()}


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
