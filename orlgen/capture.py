"""ORS environment → Snapshot. The only module that talks to a server.

Requests are few and batched: discovery (`splits`, `num_tasks`, `tools`), a handful of probe
sessions per split to find task-only tools, and `task_range` in batches for tasks. A server
that refuses `task_range` is read with one `get_task` per task instead.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from . import names
from .errors import OrlgenError
from .runtime.connection import Connection
from .schema import infer_task_schema
from .snapshot import Snapshot, Split, SplitTasks, Target, Task, TaskRef, TerminalTool, Tool

ALL_TASKS_UP_TO = 1000  # `--tasks` default: a split this small is captured whole ...
SAMPLE_SIZE = 200  # ... a larger one as a sample of this many, for schema inference
SAMPLE_CHUNKS = 4  # taken as this many evenly spaced runs, one request each
BATCH = 500  # tasks per task_range request
REQUEST_TIMEOUT = 120.0  # seconds any one request may take

_CATALOG = re.compile(r"^[\w.-]+/[\w.-]+$")
_MODULE = re.compile(r"^[\w.]+:\w+$")

TaskMode = Literal["all", "none"] | int | None


class CaptureError(OrlgenError, RuntimeError):
    """The target cannot be captured; the message says why in one line."""


@dataclass(frozen=True)
class CaptureOptions:
    env: str | None = None  # the environment's key on a multi-environment server
    name: str | None = None  # module name; default from the catalog name or the env key
    splits: tuple[str, ...] = ()  # capture only these splits (default: all)
    tasks: TaskMode = None  # "all", "none", a sample size, or None for the size-based default
    probes: int = 3  # sessions opened per split to discover task-only tools


def target_kind(target: str) -> Literal["catalog", "url", "module"]:
    if "://" in target:
        return "url"
    if _MODULE.match(target):
        return "module"
    if _CATALOG.match(target):
        return "catalog"
    raise CaptureError(f"{target!r} is neither a catalog name (Owner/Env), a URL, nor module:EnvClass")


def capture(target: str, options: CaptureOptions = CaptureOptions(), progress: Any = None) -> Snapshot:
    """Capture `target` into a snapshot. `progress(label, total)` makes a progress context."""
    kind = target_kind(target)
    with _reachable(kind, target, options.env) as (connection, recorded):
        return _Capture(connection, recorded, options, progress).run()


@contextmanager
def _reachable(kind: str, target: str, env: str | None) -> Iterator[tuple[Connection, Target]]:
    """A connection to the target, and the target as the snapshot records it."""
    if kind == "module":
        from .serve import ServeError, load_env_class, serving

        try:
            env_cls = load_env_class(target)
            with serving(env_cls) as url:
                key = env_cls.name().lower()
                yield Connection(url=url, catalog=None, env=key, api_key=None), Target(kind="module", value=target, env=key)
        except ServeError as exc:
            raise CaptureError(str(exc)) from exc
    elif kind == "url":
        url = target.rstrip("/")
        key = env or _default_env(url)
        yield Connection(url=url, catalog=None, env=key, api_key=None), Target(kind="url", value=url, env=key)
    else:
        key = target.split("/", 1)[1].lower()
        yield Connection(url=None, catalog=target, env=key, api_key=None), Target(kind="catalog", value=target, env=key)


def _default_env(url: str) -> str:
    """The only environment a server hosts; a server with several needs `--env`."""
    try:
        with urllib.request.urlopen(f"{url}/list_environments", timeout=30) as response:
            envs = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CaptureError(f"cannot reach an ORS server at {url}: {getattr(exc, 'reason', exc)}") from exc
    if not isinstance(envs, list) or not envs:
        raise CaptureError(f"{url}/list_environments lists no environments")
    if len(envs) > 1:
        raise CaptureError(f"{url} hosts several environments {envs}: choose one with --env")
    return str(envs[0])


class _Capture:
    def __init__(self, connection: Connection, target: Target, options: CaptureOptions, progress: Any) -> None:
        self.target = target
        self.options = options
        self.progress = progress or _no_progress
        self.connection = connection
        self.secrets = {"api_key": connection.api_key} if target.kind == "catalog" and connection.api_key else None

    def run(self) -> Snapshot:
        splits = self._splits()
        shared = {spec.name: spec for spec in self._sdk("list tools", lambda env: env.list_tools())}
        terminal = self._sdk("read the terminal tool", lambda env: env.terminal_tool())
        probed, task_only = self._probe(splits, shared)
        tasks: dict[str, SplitTasks] = {}
        specs: list[dict[str, Any]] = []  # every task read, stored or not: the task schema's evidence
        for split in splits:
            tasks[split.name], read = self._tasks(split)
            specs += read
        tools = [_tool(spec, shared=True, offered_on=[]) for spec in shared.values()]
        tools += [_tool(spec, shared=False, offered_on=refs) for spec, refs in task_only.values()]
        return Snapshot(
            name=self.options.name or self._default_name(),
            target=self.target,
            splits=splits,
            tools=tools,
            terminal_tool=None if terminal is None else TerminalTool(
                name=terminal.name, arg=terminal.arg, description=terminal.description or ""
            ),
            probed_tasks=probed,
            tasks=tasks,
            task_schema=infer_task_schema(specs),
        ).canonical()

    def _default_name(self) -> str:
        if self.target.kind == "catalog":
            return names.slug(self.target.value)
        # A module target names the class (`IcuSepsisEnvironment`), whose words survive; a URL only its key.
        return names.env_slug(self.target.value.rsplit(":", 1)[-1] if self.target.kind == "module" else self.target.env)

    def _sdk(self, what: str, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """`await call(environment)`, bounded; any failure is a one-line CaptureError."""
        try:
            return self.connection.run(call, timeout=REQUEST_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - SDK and transport errors have no common base
            raise CaptureError(f"{self.target.value}: cannot {what}: {type(exc).__name__}: {exc}".splitlines()[0]) from exc

    def _splits(self) -> list[Split]:
        available = self._sdk("list splits", lambda env: env.list_splits())
        chosen = list(self.options.splits) or available
        unknown = sorted(set(chosen) - set(available))
        if unknown:
            raise CaptureError(f"{self.target.value} has no split {unknown[0]!r} (it has {available})")
        return [Split(name=s, num_tasks=self._sdk(f"count tasks of {s!r}", lambda env, s=s: env.num_tasks(s)))
                for s in chosen]

    def _probe(self, splits: list[Split], shared: dict[str, Any]) -> tuple[list[TaskRef], dict[str, tuple[Any, list[TaskRef]]]]:
        """Open sessions on a few tasks per split; a tool a session lists beyond /tools is task-only."""
        probed: list[TaskRef] = []
        task_only: dict[str, tuple[Any, list[TaskRef]]] = {}
        for split in splits:
            for index in _spread(split.num_tasks, self.options.probes):
                ref = TaskRef(split=split.name, index=index)
                probed.append(ref)
                for spec in self._session_tools(ref):
                    if spec.name in shared:
                        continue
                    seen = task_only.get(spec.name)
                    if seen is None:
                        task_only[spec.name] = (spec, [ref])
                    elif _schema_of(seen[0]) != _schema_of(spec):
                        first = seen[1][0]
                        raise CaptureError(
                            f"task-only tool {spec.name!r} has different schemas on tasks "
                            f"{first.split}[{first.index}] and {ref.split}[{ref.index}]"
                        )
                    else:
                        seen[1].append(ref)
        return probed, task_only

    def _session_tools(self, ref: TaskRef) -> list[Any]:
        async def open_and_list(env: Any) -> list[Any]:
            async with env.session(split=ref.split, index=ref.index, secrets=self.secrets) as session:
                return await session.list_tools()

        return self._sdk(f"open a session on {ref.split}[{ref.index}]", open_and_list)

    def _tasks(self, split: Split) -> tuple[SplitTasks, list[dict[str, Any]]]:
        """The split's tasks as stored in the snapshot, and every task read.

        `--tasks none` stores none, but still reads a sample: the task schema decides the
        generated dataset's columns, and it needs evidence.
        """
        mode = "none" if self.options.tasks == 0 else self.options.tasks
        if mode is None:
            mode = "all" if split.num_tasks <= ALL_TASKS_UP_TO else SAMPLE_SIZE
        if split.num_tasks == 0:
            return SplitTasks(coverage="none", tasks=[]), []
        if mode == "all" or (mode != "none" and mode >= split.num_tasks):
            runs, coverage = [(0, split.num_tasks)], "all"
        else:
            runs, coverage = _sample_runs(split.num_tasks, SAMPLE_SIZE if mode == "none" else mode), "sample"
        tasks = self._read(split, runs)
        if mode == "none":
            return SplitTasks(coverage="none", tasks=[]), [task.spec for task in tasks]
        return SplitTasks(coverage=coverage, tasks=tasks), [task.spec for task in tasks]

    def _read(self, split: Split, runs: list[tuple[int, int]]) -> list[Task]:
        total = sum(stop - start for start, stop in runs)
        tasks: list[Task] = []
        with self.progress(f"tasks of {split.name}", total) as advance:
            for start, stop in runs:
                for batch_start in range(start, stop, BATCH):
                    batch_stop = min(batch_start + BATCH, stop)
                    specs = self._task_range(split.name, batch_start, batch_stop)
                    tasks += [Task(index=batch_start + i, spec=spec) for i, spec in enumerate(specs)]
                    advance(batch_stop - batch_start)
        return tasks

    def _task_range(self, split: str, start: int, stop: int) -> list[dict[str, Any]]:
        try:
            tasks = self.connection.run(lambda env: env.get_task_range(split, start, stop), timeout=REQUEST_TIMEOUT)
        except Exception:  # noqa: BLE001 - an older server without /task_range: one request per task
            tasks = [self._sdk(f"read task {split}[{i}]", lambda env, i=i: env.get_task(split, i)) for i in range(start, stop)]
        return [task.task_spec for task in tasks]


def _tool(spec: Any, *, shared: bool, offered_on: list[TaskRef]) -> Tool:
    return Tool(
        name=spec.name,
        description=spec.description or "",
        input_schema=dict(spec.input_schema) if spec.input_schema else None,
        shared=shared,
        offered_on=offered_on,
    )


def _schema_of(spec: Any) -> tuple[str, str]:
    return (spec.description or "", json.dumps(spec.input_schema, sort_keys=True))


def _spread(total: int, count: int) -> list[int]:
    """`count` indices spread evenly over range(total), starting at 0."""
    if total <= 0 or count <= 0:
        return []
    count = min(count, total)
    return sorted({i * total // count for i in range(count)})


def _sample_runs(total: int, size: int) -> list[tuple[int, int]]:
    """About `size` (at most `total`) indices as `SAMPLE_CHUNKS` evenly spaced contiguous runs."""
    size = min(size, total)
    chunks = min(SAMPLE_CHUNKS, size)
    length = size // chunks
    if chunks == 1:
        return [(0, length)]
    # The first run starts at 0 and the last ends at `total`, so the sample spans the split.
    return [(start, start + length) for start in sorted({i * (total - length) // (chunks - 1) for i in range(chunks)})]


@contextmanager
def _no_progress(label: str, total: int) -> Iterator[Any]:
    yield lambda n: None
