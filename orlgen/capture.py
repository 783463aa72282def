"""ORS environment → Snapshot. The only module that talks to a server.

Requests are few and batched: discovery (`splits`, `num_tasks`, `tools`), a handful of probe
sessions per split to find task-only tools, and `task_range` in batches for tasks. A server
that says it has no `task_range` (404, 405, 501) is read with one `get_task` per task instead.

The server is not trusted: every answer is bounded in size and time, the whole capture has a
deadline, what the server says is checked for consistency before it is stored, and its text is
stripped of control characters and cut short before it reaches a message. Targets are recorded
without credentials, and secret values are never recorded nor shown. docs/capture.md is the
user's side of all this.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from . import names
from .conversation import Conversation, conversation_fields, conversation_of
from .errors import OrlgenError
from .identity import default_name
from .runtime import provenance
from .runtime.connection import (
    CallTimeout,
    Connection,
    choose_api_key,
    platform_key,
    redact,
    run_on_loop,
    session_secrets,
)
from .runtime.transport import AnswerTooLarge, RedirectRefused, get_json_bytes
from .schema import infer_task_schema
from .snapshot import RewardRule, Snapshot, Split, SplitTasks, Target, Task, TaskRef, TerminalTool, Tool

ALL_TASKS_UP_TO = 1000  # `--tasks` default: a split this small is captured whole ...
SAMPLE_SIZE = 200  # ... a larger one as a sample of this many
SAMPLE_CHUNKS = 3  # the sample's second half: this many evenly spaced runs, one request each
BATCH = 500  # tasks per task_range request
UNSUPPORTED = (404, 405, 501)  # statuses by which a server says it has no such endpoint
MESSAGE_CHARS = 300  # server text quoted in a message is cut to this length

_CATALOG = re.compile(r"^[\w.-]+/[\w.-]+$")
_MODULE = re.compile(r"^[\w.]+:\w+$")
# ANSI/OSC escape sequences, then any other control character (newlines included).
_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]+")

TaskMode = Literal["all", "none"] | int | None


class CaptureError(OrlgenError, RuntimeError):
    """The target cannot be captured; the message says why in one line."""


def _env_number(name: str, default: float) -> float:
    """A positive number from the environment variable `name`, else `default`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CaptureError(f"{name}={raw!r} is not a positive number")
    return value


@dataclass(frozen=True)
class CaptureOptions:
    env: str | None = None  # the environment's key on a multi-environment server
    name: str | None = None  # module name; default from the catalog name or the env key
    splits: tuple[str, ...] = ()  # capture only these splits (default: all)
    tasks: TaskMode = None  # "all", "none", a sample size, or None for the size-based default
    probes: int = 3  # sessions opened per split to discover task-only tools
    reward: RewardRule = "outcome"  # the env's reward rule, as its author documents it (recorded, not probed)
    # name → value, sent with every probe session. Only the names reach the snapshot.
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    # Bounds on what a server may cost us, overridable from the environment.
    max_answer_bytes: int = field(default_factory=lambda: int(_env_number("ORLGEN_MAX_ANSWER_MB", 64) * 2**20))
    request_timeout: float = field(default_factory=lambda: _env_number("ORLGEN_REQUEST_TIMEOUT", 120))
    deadline: float = field(default_factory=lambda: _env_number("ORLGEN_CAPTURE_DEADLINE", 1800))


def target_kind(target: str) -> Literal["catalog", "url", "module"]:
    if "://" in target:
        return "url"
    if _MODULE.match(target):
        return "module"
    if _CATALOG.match(target):
        return "catalog"
    raise CaptureError(f"{redact(target)!r} is neither a catalog name (Owner/Env), a URL, nor module:EnvClass")


def capture(target: str, options: CaptureOptions | None = None, progress: Any = None) -> Snapshot:
    """Capture `target` into a snapshot. `progress(label, total)` makes a progress context."""
    options = options or CaptureOptions()
    kind = target_kind(target)
    clock = _Clock(options.request_timeout, options.deadline)  # from here on, every request counts
    with _reachable(kind, target, options, clock) as (connection, recorded):
        return _Capture(connection, recorded, options, progress, clock).run()


def summary(snapshot: Snapshot) -> str:
    """What a capture stored, for its one-line report: tools, and tasks stored/total per split."""
    splits = ", ".join(
        f"{split.name} {len(snapshot.tasks[split.name].tasks) if split.name in snapshot.tasks else 0}/{split.num_tasks}"
        for split in snapshot.splits
    )
    tools = len(snapshot.tools)
    return f"{tools} tool{'s' * (tools != 1)}; tasks stored: {splits or 'no splits'}"


class _Clock:
    """The capture's time bounds: each request gets the request timeout, or what is left of the
    whole capture's deadline when that is less."""

    def __init__(self, request_timeout: float, deadline: float) -> None:
        self.request_timeout = request_timeout
        self.deadline = deadline
        self.ends = time.monotonic() + deadline

    def run(self, request: Callable[[float], Any]) -> Any:
        """`request(timeout)`; its CallTimeout says which bound it hit."""
        past = CallTimeout(f"the capture ran past its {self.deadline:g} s deadline (ORLGEN_CAPTURE_DEADLINE)")
        left = self.ends - time.monotonic()
        if left <= 0:
            raise past
        try:
            return request(min(self.request_timeout, left))
        except CallTimeout:
            raise (
                past
                if left < self.request_timeout
                else CallTimeout(f"no answer within {self.request_timeout:g} s (ORLGEN_REQUEST_TIMEOUT)")
            ) from None


@contextmanager
def _reachable(kind: str, target: str, options: CaptureOptions, clock: _Clock) -> Iterator[tuple[Connection, Target]]:
    """A connection to the target, and the target as the snapshot records it (no credentials).
    Only a catalog target falls back to the platform key (`OPENREWARD_API_KEY`); any other gets
    a key only when one is given (`--secret api_key` / `--secret OPENREWARD_API_KEY`)."""
    api_key = choose_api_key(None, options.secrets)
    limit = options.max_answer_bytes
    if kind == "module":
        with _served(target) as (url, key):
            yield Connection(url, None, key, api_key, limit), Target(kind="module", value=target, env=key)
    elif kind == "url":
        url = _server_url(target)
        key = options.env or _default_env(url, limit, clock, api_key)
        yield Connection(url, None, key, api_key, limit), Target(kind="url", value=url, env=key)
    else:
        key = target.split("/", 1)[1].lower()
        yield Connection(None, target, key, platform_key(api_key), limit), Target(kind="catalog", value=target, env=key)


@contextmanager
def _served(target: str) -> Iterator[tuple[str, str]]:
    """A `module:EnvClass` target served in this process, its output going to a log file; yields
    the URL and the env key. The log is removed after a capture that succeeds; a failure's
    message names it."""
    from .serve import ServeError, load_env_class, serving

    try:
        env_cls = load_env_class(target)
    except ServeError as exc:
        raise CaptureError(clean(str(exc))) from exc
    fd, name = tempfile.mkstemp(prefix=f"orlgen-{names.slug(target.split(':')[-1])}-", suffix=".log")
    os.close(fd)
    log = Path(name)
    try:
        with serving(env_cls, log=log) as url:
            yield url, env_cls.name().lower()
    except ServeError as exc:
        raise CaptureError(f"{clean(str(exc))} (server log: {log})") from exc
    except CaptureError as exc:
        raise CaptureError(f"{exc} (server log: {log})") from exc
    else:
        log.unlink(missing_ok=True)


def _server_url(target: str) -> str:
    """The server's base URL: no user-info, query or fragment.

    The SDK appends endpoint paths to a base URL and cannot carry either, and both are where
    credentials hide (`http://user:pass@host`, `?token=...`): dropping them means the snapshot,
    the generated module and every message record only where the server is. Credentials
    travel as `--secret api_key`, never in the target.
    """
    try:
        parts = urllib.parse.urlsplit(target)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise CaptureError(f"{redact(target)!r} is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise CaptureError(f"{redact(target)!r} is not an http(s) URL")
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{port}" if port is not None else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _default_env(url: str, limit: int, clock: _Clock, api_key: str | None) -> str:
    """The only environment a server hosts; a server with several needs `--env`. Read under the
    capture's bounds, like every other request."""
    where = url
    try:
        body = clock.run(
            lambda timeout: run_on_loop(get_json_bytes(f"{url}/list_environments", limit, api_key), timeout)
        )
    except (CallTimeout, AnswerTooLarge, RedirectRefused) as exc:
        raise CaptureError(f"cannot reach an ORS server at {where}: {exc}") from exc
    except Exception as exc:  # transport errors have no common base
        status = _status(exc)
        said = f"the server answered {status}" if status else f"{type(exc).__name__}: {exc}"
        raise CaptureError(f"cannot reach an ORS server at {where}: {clean(said)}") from exc
    try:
        envs = json.loads(body)
    except ValueError as exc:
        raise CaptureError(f"{where}/list_environments is not JSON: is this an ORS server?") from exc
    if not isinstance(envs, list) or not envs or not all(isinstance(env, str) and env for env in envs):
        raise CaptureError(f"{where}/list_environments lists no environments")
    if len(envs) > 1:
        raise CaptureError(f"{where} hosts several environments {clean(str(envs))}: choose one with --env")
    return envs[0]


def clean(text: str, secrets: Mapping[str, str] | None = None, limit: int = MESSAGE_CHARS) -> str:
    """Server or exception text made safe for one line of a terminal: escape sequences and
    control characters removed, credentials masked, cut to `limit` characters."""
    values = [value for value in (secrets or {}).values() if isinstance(value, str)]
    # Cut first (server text can be megabytes), keeping enough that a secret at the cut is whole.
    text = text[: 2 * limit + max(map(len, values), default=0)]
    text = redact(_CONTROL.sub(" ", _ESCAPES.sub("", text)).strip(), values)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _last_line(text: str) -> str:
    """The last non-blank line of `text`: the exception at the end of a traceback."""
    lines = [line for line in _ESCAPES.sub("", text).splitlines() if line.strip()]
    return lines[-1].strip() if lines else text


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) else None


class _Capture:
    def __init__(
        self, connection: Connection, target: Target, options: CaptureOptions, progress: Any, clock: _Clock
    ) -> None:
        self.target = target
        self.options = options
        self.progress = progress or _no_progress
        self.connection = connection
        self.secrets = session_secrets(options.secrets, connection)
        self.clock = clock
        self.conversations: list[Conversation] = []  # what each probe session's get_messages showed

    def run(self) -> Snapshot:
        splits = self._splits()
        shared = _unique_tools(self._sdk("list tools", lambda env: env.list_tools()), "/tools", self._fail)
        terminal = self._sdk("read the terminal tool", lambda env: env.terminal_tool())
        probed, task_only = self._probe(splits, shared)
        tasks: dict[str, SplitTasks] = {}
        specs: list[dict[str, Any]] = []  # every task read, stored or not: the task schema's evidence
        for split in splits:
            tasks[split.name], read = self._tasks(split)
            specs += read
        try:
            return self._snapshot(splits, shared, terminal, probed, task_only, tasks, specs)
        except ValidationError as exc:  # e.g. a schema nested deeper than a snapshot may hold
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the answer"
            raise self._fail(f"the server's answer cannot be recorded: {where}: {first['msg']}") from exc

    def _snapshot(
        self,
        splits: list[Split],
        shared: dict[str, Any],
        terminal: Any,
        probed: list[TaskRef],
        task_only: dict[str, tuple[Any, list[TaskRef]]],
        tasks: dict[str, SplitTasks],
        specs: list[dict[str, Any]],
    ) -> Snapshot:
        tools = [_tool(spec, shared=True, offered_on=[]) for spec in shared.values()]
        tools += [_tool(spec, shared=False, offered_on=refs) for spec, refs in task_only.values()]
        return Snapshot(
            name=self.options.name or default_name(self.target),
            target=self.target,
            secret_names=sorted(self.options.secrets),
            reward=self.options.reward,
            deployment=self._deployment(),
            splits=splits,
            tools=tools,
            terminal_tool=(
                None
                if terminal is None
                else TerminalTool(name=terminal.name, arg=terminal.arg, description=terminal.description or "")
            ),
            **conversation_fields(self.conversations),
            probed_tasks=probed,
            tasks=tasks,
            task_schema=infer_task_schema(specs),
        ).canonical()

    def _deployment(self) -> dict[str, str] | None:
        """What the server says of its deployment (URL and catalog targets; best effort)."""
        if self.target.kind == "module":  # served here, by this SDK: nothing to learn
            return None
        try:
            return self._call(provenance.live)
        except Exception:  # an old server without /version: the schema is what matters
            return None

    def _fail(self, message: str) -> CaptureError:
        # Server text in `message` was cut already; the bound here catches names and the like.
        return CaptureError(f"{self.target.value}: {clean(message, self.options.secrets, limit=4 * MESSAGE_CHARS)}")

    def _call(self, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """`await call(environment)`, bounded by the request timeout and the capture's deadline."""
        return self.clock.run(lambda timeout: self.connection.run(call, timeout=timeout))

    def _sdk(self, what: str, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """`_call`, with any failure turned into a one-line CaptureError."""
        try:
            return self._call(call)
        except Exception as exc:  # SDK and transport errors have no common base
            raise self._fail(f"cannot {what}: {self._describe(exc)}") from exc

    def _describe(self, exc: BaseException) -> str:
        """An SDK failure in a few words: the status and the server's last line, not a traceback."""
        if isinstance(exc, (CallTimeout, AnswerTooLarge, RedirectRefused)):
            return str(exc)
        status = _status(exc)
        if status is not None:
            said = _last_line(str(getattr(exc, "message", "") or ""))
            return f"the server answered {status}" + (f": {clean(said)}" if said else "")
        return f"{type(exc).__name__}: {clean(_last_line(str(exc)))}"

    def _splits(self) -> list[Split]:
        available = self._sdk("list splits", lambda env: env.list_splits())
        if not isinstance(available, list) or not all(isinstance(s, str) and s for s in available):
            raise self._fail("the server's split list is not a list of names")
        if len(set(available)) != len(available):
            raise self._fail(
                f"the server lists a split twice: {sorted(s for s in available if available.count(s) > 1)[0]!r}"
            )
        chosen = list(dict.fromkeys(self.options.splits)) or available
        unknown = sorted(set(chosen) - set(available))
        if unknown:
            raise self._fail(f"no split {unknown[0]!r} (it has {available})")
        return [Split(name=s, num_tasks=self._count(s)) for s in chosen]

    def _count(self, split: str) -> int:
        count = self._sdk(f"count tasks of {split!r}", lambda env: env.num_tasks(split))
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise self._fail(f"the server says split {split!r} has {count!r} tasks")
        return count

    def _probe(
        self, splits: list[Split], shared: dict[str, Any]
    ) -> tuple[list[TaskRef], dict[str, tuple[Any, list[TaskRef]]]]:
        """Open sessions on a few tasks per split; a tool a session lists beyond /tools is task-only."""
        probed: list[TaskRef] = []
        task_only: dict[str, tuple[Any, list[TaskRef]]] = {}
        for split in splits:
            for index in probe_indices(split.num_tasks, self.options.probes):
                ref = TaskRef(split=split.name, index=index)
                probed.append(ref)
                listed = _unique_tools(self._session_tools(ref), f"the session on {split.name}[{index}]", self._fail)
                for spec in listed.values():
                    if spec.name in shared:
                        continue
                    seen = task_only.get(spec.name)
                    if seen is None:
                        task_only[spec.name] = (spec, [ref])
                    elif _schema_of(seen[0]) != _schema_of(spec):
                        first = seen[1][0]
                        raise self._fail(
                            f"task-only tool {spec.name!r} has different schemas on tasks "
                            f"{first.split}[{first.index}] and {ref.split}[{ref.index}]"
                        )
                    else:
                        seen[1].append(ref)
        return probed, task_only

    def _session_tools(self, ref: TaskRef) -> list[Any]:
        async def open_and_list(env: Any) -> list[Any]:
            async with env.session(split=ref.split, index=ref.index, secrets=self.secrets) as session:
                self.conversations.append(await conversation_of(session))
                return await session.list_tools()

        try:
            return self._call(open_and_list)
        except Exception as exc:  # SDK and transport errors have no common base
            given = f" (secrets sent: {', '.join(sorted(self.options.secrets))})" if self.options.secrets else ""
            raise self._fail(
                f"the probe session on task {ref.split}[{ref.index}] failed: {self._describe(exc)}{given}. "
                "If the environment needs a secret (an API key its setup reads), pass it with --secret NAME; "
                "or skip probing with --probes 0, which captures no task-only tools"
            ) from exc

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
            runs, coverage = sample_runs(split.num_tasks, SAMPLE_SIZE if mode == "none" else mode), "sample"
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
        """Tasks [start, stop) in one request; one request per task only on a server that
        says it has no `task_range`. A timeout or any other failure is an error, not a reason to
        send `stop - start` slower requests."""
        where = f"{split}[{start}:{stop}]"
        try:
            tasks = self._call(lambda env: env.get_task_range(split, start, stop))
        except Exception as exc:  # SDK and transport errors have no common base
            if _status(exc) not in UNSUPPORTED:
                raise self._fail(f"cannot read tasks {where}: {self._describe(exc)}") from exc
            tasks = [
                self._sdk(f"read task {split}[{i}]", lambda env, i=i: env.get_task(split, i))
                for i in range(start, stop)
            ]
        if not isinstance(tasks, list) or len(tasks) != stop - start:
            count = len(tasks) if isinstance(tasks, list) else type(tasks).__name__
            raise self._fail(f"asked for tasks {where} ({stop - start}), the server sent {count}")
        specs = [getattr(task, "task_spec", None) for task in tasks]
        bad = next((start + i for i, spec in enumerate(specs) if not isinstance(spec, dict)), None)
        if bad is not None:
            raise self._fail(f"task {split}[{bad}] is not a JSON object")
        return specs


def _unique_tools(specs: Any, where: str, fail: Callable[[str], CaptureError]) -> dict[str, Any]:
    """Tool specs by name; a name listed twice is the server's error, never silently merged."""
    if not isinstance(specs, list):
        raise fail(f"{where} sent no tool list")
    tools: dict[str, Any] = {}
    for spec in specs:
        name = getattr(spec, "name", None)
        if not isinstance(name, str) or not name:
            raise fail(f"{where} lists a tool without a name")
        if name in tools:
            raise fail(f"{where} lists the tool {name!r} twice")
        tools[name] = spec
    return tools


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


# Task-only tools often follow the task index: offered on odd tasks, on every third one. The
# probes meet as many residues of these moduli as their number allows.
_PATTERN_MODULI = (2, 3, 4)


def probe_indices(total: int, count: int) -> list[int]:
    """`count` task indices of range(total) to probe for task-only tools.

    Tasks 0 and 1 first: adjacent, so a tool offered on even or on odd tasks only is met. The
    other probes are spread over the rest of the split, one per equal share; each takes, of the
    indices near its share's middle, the one that meets the most residues modulo 2, 3 and 4 not
    met yet (three probes of a 12-task split: 0, 1, 11 meet every residue mod 2 and 3)."""
    if total <= 0 or count <= 0:
        return []
    count = min(count, total)
    chosen = list(range(min(count, 2)))
    rest, span = count - len(chosen), total - 2
    for j in range(rest):
        low, high = 2 + j * span // rest, 2 + (j + 1) * span // rest  # this probe's share: [low, high)
        middle = (low + high - 1) / 2
        met = {(m, i % m) for i in chosen for m in _PATTERN_MODULI}
        window = math.lcm(*_PATTERN_MODULI)  # residues repeat past it: no need to look further
        candidates = range(max(low, math.floor(middle) - window), min(high, math.ceil(middle) + window + 1))
        chosen.append(
            max(candidates, key=lambda i: (len({(m, i % m) for m in _PATTERN_MODULI} - met), -abs(i - middle), i))
        )
    return chosen


def sample_runs(total: int, size: int) -> list[tuple[int, int]]:
    """Exactly `min(size, total)` task indices, as [start, stop) runs.

    The first half is the contiguous run from task 0, so `build_dataset(num_tasks=k)` for
    k up to that half needs no network; the second half is `SAMPLE_CHUNKS` runs spread over the
    rest of the split (the last one ends at its end), so the task schema sees its whole range.
    """
    size = min(size, total)
    head = (size + 1) // 2
    rest = size - head
    runs = [(0, head)] if head else []
    chunks = min(SAMPLE_CHUNKS, rest)
    end = head
    for j in range(chunks):
        length = rest // chunks + (j < rest % chunks)
        ideal = head + (j + 1) * (total - head) // chunks - length  # ends where its share of the split ends
        start = max(ideal, end)
        runs.append((start, start + length))
        end = start + length
    return runs


@contextmanager
def _no_progress(label: str, total: int) -> Iterator[Any]:
    yield lambda n: None
