"""ORS environment → Snapshot. The only module that talks to a server.

Capture speaks the wire through the runtime's own client (`orlgen.runtime.ors.client`), in few
requests: discovery without sessions (`/splits`, `num_tasks` per split, `/tools` once, which
also says whether the env scores groups and names its terminal tool), a handful of probe
sessions per split to find task-only tools, and `task_range` in batches for tasks. A server
that says it has no `task_range` (404, 405, 501) is read with one `/task` per task instead.

A probe asks its session's `/task_tools` first, which the server answers before the env's
`setup()` has run, then `/messages`, which waits for it: a setup that fails (a sandbox that
cannot be reached) leaves the conversation unknown, said in one line, and loses no tool.

The server is not trusted: every answer is bounded in size and time, the whole capture has a
deadline, what the server says is checked for consistency before it is stored, and its text is
stripped of control characters and cut short before it reaches a message. Targets are recorded
without credentials, and secret values are never recorded nor shown. docs/capture.md is the
user's side of all this.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from orlgen.capture.cleaning import MESSAGE_CHARS, clean, last_line
from orlgen.capture.conversation import Conversation, conversation_fields, conversation_of
from orlgen.capture.options import CaptureOptions
from orlgen.capture.sampling import probe_indices, reads
from orlgen.capture.targets import server_url, target_kind
from orlgen.errors import CaptureError
from orlgen.runtime.ors import provenance
from orlgen.runtime.ors.client import Client, platform_urls
from orlgen.runtime.ors.retry import STARTING_VAR, starting_seconds
from orlgen.runtime.ors.secrets import choose_api_key, platform_key
from orlgen.runtime.ors.sse import Hung
from orlgen.runtime.ors.transport import AnswerTooLarge, RedirectRefused, get_json_bytes
from orlgen.runtime.session import backoff
from orlgen.runtime.session.connection import CallTimeout, Connection, run_on_loop
from orlgen.schema import infer_task_schema
from orlgen.snapshot.model import (
    Deployment,
    Snapshot,
    Split,
    SplitTasks,
    Target,
    Task,
    TaskRef,
    TerminalTool,
    Tool,
    implied_split_type,
)
from orlgen.snapshot.recorded import default_name
from pydantic import ValidationError

_log = logging.getLogger("orlgen")

BATCH = 1000  # tasks per task_range request: 20 for 20,000 tasks
UNSUPPORTED = (404, 405, 501)  # statuses by which a server says it has no such endpoint
CLOSING_SECONDS = 5.0  # of a probe's time bound, kept for deleting its session


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

    def run(self, request: Callable[[float], Any], building: float = 0.0) -> Any:
        """`request(timeout)`; its CallTimeout says which bound it hit. `building`: seconds the
        request may spend on top while the server builds an env (a probe session), which it
        answers nothing meanwhile."""
        past = CallTimeout(f"the capture ran past its {self.deadline:g} s deadline (ORLGEN_CAPTURE_DEADLINE)")
        left = self.ends - time.monotonic()
        if left <= 0:
            raise past
        bound = self.request_timeout + building
        try:
            return request(min(bound, left))
        except CallTimeout:
            variables = "ORLGEN_REQUEST_TIMEOUT" + (f" + {STARTING_VAR} for building the env" if building else "")
            raise past if left < bound else CallTimeout(f"no answer within {bound:g} s ({variables})") from None


@contextmanager
def _reachable(kind: str, target: str, options: CaptureOptions, clock: _Clock) -> Iterator[tuple[Connection, Target]]:
    """A connection to the target, and the target as the snapshot records it (no credentials).
    Only a catalog target falls back to the platform key (`OPENREWARD_API_KEY`); any other gets
    a key only when one is given (`--secret api_key` / `--secret OPENREWARD_API_KEY`)."""
    api_key = choose_api_key(None, options.secrets)
    limit = options.max_answer_bytes
    if kind == "module":
        with _served(target, options.secrets) as (url, key):
            yield Connection(url, None, key, api_key, limit), Target(kind="module", value=target, env=key)
    elif kind == "url":
        recorded = _url_target(target, options, clock, api_key)
        yield Connection(recorded.value, None, recorded.env, api_key, limit), recorded
    else:
        recorded = _catalog_target(target)
        yield Connection(None, target, recorded.env, platform_key(api_key), limit), recorded


def identify(target: str, options: CaptureOptions) -> Target:
    """`target` as a capture of it records it (its env key above all), learned with the fewest
    requests: a module's class is imported, a URL's server asked for its one environment unless
    `--env` names it. `snapshot --check` finds the snapshot to compare with by this, as a plain
    capture finds the module it updates (`review.identity`)."""
    kind = target_kind(target)
    if kind == "module":
        return Target(kind="module", value=target, env=_env_class(target).name().lower())
    if kind == "url":
        clock = _Clock(options.request_timeout, options.deadline)
        return _url_target(target, options, clock, choose_api_key(None, options.secrets))
    return _catalog_target(target)


def _url_target(target: str, options: CaptureOptions, clock: _Clock, api_key: str | None) -> Target:
    url = server_url(target)
    return Target(kind="url", value=url, env=options.env or _default_env(url, options.max_answer_bytes, clock, api_key))


def _catalog_target(target: str) -> Target:
    return Target(kind="catalog", value=target, env=target.split("/", 1)[1].lower())


def _env_class(target: str) -> Any:
    """The user's Environment subclass, imported; a failure is a one-line CaptureError."""
    from orlgen.runtime.session.local import ServeError, load_env_class

    try:
        return load_env_class(target)
    except ServeError as exc:
        raise CaptureError(clean(str(exc))) from exc


@contextmanager
def _served(target: str, secrets: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """A `module:EnvClass` target served in this process, its output going to a private log file
    with `secrets` masked (`orlgen.runtime.session.local.open_log`); yields the URL and the env key. The
    log is removed after a capture that succeeds; a failure's message names it."""
    from orlgen.runtime.session.local import ServeError, open_log, serving

    env_cls = _env_class(target)
    log = open_log(target.split(":")[-1])
    try:
        with serving(env_cls, log=log, secrets=secrets.values()) as url:
            yield url, env_cls.name().lower()
    except ServeError as exc:
        raise CaptureError(f"{clean(str(exc))} (server log: {log})") from exc
    except CaptureError as exc:
        raise CaptureError(f"{exc} (server log: {log})") from exc
    else:
        log.unlink(missing_ok=True)


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
        if status == 402:
            raise CaptureError(f"{where}: {backoff.payment_required()}") from exc
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
        self.clock = clock
        self.conversations: list[Conversation] = []  # what each probe session's messages showed
        # probes whose setup failed: the task, why, and whether its tools were listed all the same
        self.unready: list[tuple[TaskRef, str, bool]] = []

    def run(self) -> Snapshot:
        with self.progress("discovery", 0):
            self._refuse_missing_secrets()
            splits = self._splits()
            listing = self._ask("list tools", "GET", "/tools")
            shared = _unique_tools(_tool_specs(listing), "/tools", self._fail)
        probed, task_only = self._probe(splits, shared)
        self._note_unready()
        tasks: dict[str, SplitTasks] = {}
        specs: list[dict[str, Any]] = []  # every task read, stored or not: the task schema's evidence
        for split in splits:
            tasks[split.name], read = self._tasks(split)
            specs += read
        try:
            return self._snapshot(splits, listing, shared, probed, task_only, tasks, specs)
        except ValidationError as exc:  # e.g. a schema nested deeper than a snapshot may hold
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the answer"
            raise self._fail(f"the server's answer cannot be recorded: {where}: {first['msg']}") from exc

    def _snapshot(
        self,
        splits: list[Split],
        listing: dict[str, Any],
        shared: dict[str, Any],
        probed: list[TaskRef],
        task_only: dict[str, tuple[Any, list[TaskRef]]],
        tasks: dict[str, SplitTasks],
        specs: list[dict[str, Any]],
    ) -> Snapshot:
        tools = [_tool(spec, shared=True, offered_on=[]) for spec in shared.values()]
        tools += [_tool(spec, shared=False, offered_on=refs) for spec, refs in task_only.values()]
        terminal = listing.get("terminal_tool") or None
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
                else TerminalTool(
                    name=terminal.get("name"), arg=terminal.get("arg"), description=terminal.get("description") or ""
                )
            ),
            **conversation_fields(self.conversations),
            probed_tasks=probed,
            toolset=self.options.toolset,
            score_group=listing.get("supports_score_group") is True,
            tasks=tasks,
            task_schema=infer_task_schema(specs),
        ).canonical()

    def _deployment(self) -> Deployment | None:
        """What the server says of its deployment (URL and catalog targets; best effort)."""
        if self.target.kind == "module":  # served here, by this SDK: nothing to learn
            return None
        try:
            found = self._call(provenance.live)
        except Exception:  # an old server without /version: the schema is what matters
            return None
        return None if found is None else Deployment(**found)  # fields `provenance.parse` checked

    def _fail(self, message: str) -> CaptureError:
        # Server text in `message` was cut already; the bound here catches names and the like.
        return CaptureError(f"{self.target.value}: {clean(message, self.options.secrets, limit=4 * MESSAGE_CHARS)}")

    def _call(self, call: Callable[[Client], Awaitable[Any]]) -> Any:
        """`await call(client)`, bounded by the request timeout and the capture's deadline."""
        return self.clock.run(lambda timeout: self.connection.run(call, timeout))

    def _ask(self, what: str, method: str, suffix: str, body: Any = None) -> Any:
        """One request outside any session (`/{env}{suffix}`), its failure a one-line CaptureError."""
        return self._checked(what, lambda client: client.request(method, client.route(suffix), body))

    def _checked(self, what: str, call: Callable[[Client], Awaitable[Any]]) -> Any:
        """`_call`, with any failure turned into a one-line CaptureError."""
        try:
            return self._call(call)
        except Exception as exc:  # client and transport errors have no common base
            raise self._fail(f"cannot {what}: {self._describe(exc)}") from exc

    def _describe(self, exc: BaseException) -> str:
        """A failure in a few words: the status and the server's last line, not a traceback; a
        402 is the runtime's line (the account has no credit)."""
        if isinstance(exc, (CallTimeout, AnswerTooLarge, RedirectRefused)):
            return str(exc)
        status = _status(exc)
        if status == 402:
            return str(backoff.payment_required())
        if status is not None:
            said = last_line(str(getattr(exc, "said", "") or ""))
            return f"the server answered {status}" + (f": {clean(said)}" if said else "")
        return f"{type(exc).__name__}: {clean(last_line(str(exc)))}"

    def _refuse_missing_secrets(self) -> None:
        """A catalog env's required secrets (the platform API's `required-secrets`) that were not
        given, named before any probe would fail for want of them. Best effort: a platform that
        cannot say leaves it to the probes."""
        if self.target.kind != "catalog":
            return
        owner, name = self.target.value.split("/", 1)
        url = f"{platform_urls()[1].rstrip('/')}/v1/environments/{_quoted(owner)}/{_quoted(name)}/required-secrets"
        try:
            body = self.clock.run(
                lambda timeout: run_on_loop(
                    get_json_bytes(url, self.options.max_answer_bytes, self.connection.api_key), timeout
                )
            )
            required = json.loads(body).get("secrets")
        except Exception:  # the endpoint is a courtesy: the probes still say what is missing
            return
        if not isinstance(required, list):
            return
        missing = sorted({str(secret) for secret in required if isinstance(secret, str)} - set(self.options.secrets))
        if missing:
            flags = " ".join(f"--secret {clean(secret)}" for secret in missing)
            raise self._fail(
                f"the environment requires the secret{'s' * (len(missing) > 1)} {', '.join(map(clean, missing))} "
                f"(the platform's required-secrets): pass {flags} (the value is read from the environment "
                "variable of that name; only the name is recorded)"
            )

    def _splits(self) -> list[Split]:
        declared = _declared_splits(self._ask("list splits", "GET", "/splits"))
        if declared is None:
            raise self._fail("the server's split list is not a list of names")
        available = [name for name, _ in declared]
        if len(set(available)) != len(available):
            raise self._fail(
                f"the server lists a split twice: {sorted(s for s in available if available.count(s) > 1)[0]!r}"
            )
        chosen = list(dict.fromkeys(self.options.splits)) or available
        unknown = sorted(set(chosen) - set(available))
        if unknown:
            raise self._fail(f"no split {unknown[0]!r} (it has {available})")
        types = dict(declared)
        return [Split(name=s, num_tasks=self._count(s), type=types[s]) for s in chosen]

    def _count(self, split: str) -> int:
        answer = self._ask(f"count tasks of {split!r}", "POST", "/num_tasks", {"split": split})
        count = answer.get("num_tasks") if isinstance(answer, dict) else answer
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise self._fail(f"the server says split {split!r} has {count!r} tasks")
        return count

    def _probe(
        self, splits: list[Split], shared: dict[str, Any]
    ) -> tuple[list[TaskRef], dict[str, tuple[Any, list[TaskRef]]]]:
        """Open sessions on a few tasks per split; a tool a session lists beyond /tools is task-only.
        The probed tasks are those whose session listed its tools."""
        task_only: dict[str, tuple[Any, list[TaskRef]]] = {}
        refs = [
            TaskRef(split=split.name, index=index)
            for split in splits
            for index in probe_indices(split.num_tasks, self.options.probes)
        ]
        probed: list[TaskRef] = []
        with self.progress("probe sessions", len(refs)) as advance:
            for ref in refs:
                specs = self._session_tools(ref)
                advance(1)
                if specs is None:  # setup failed before the session listed its tools (`unready` says so)
                    continue
                probed.append(ref)
                listed = _unique_tools(specs, f"the session on {ref.split}[{ref.index}]", self._fail)
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

    def _session_tools(self, ref: TaskRef) -> list[Any] | None:
        """The tools a session on `ref` lists; None when its setup failed before it could list
        them. `/task_tools` is asked first: the server answers it before the env's `setup()` has
        run, but once setup has failed it answers setup's error (`_setup_failed`), which is
        recorded in `unready` like a later failure: the shared tools are known from `/tools`. Then
        `/messages`, which waits for setup: its failure is recorded in `unready` (the
        conversation stays unknown), not the probe's."""

        async def probe(client: Client, timeout: float) -> Any:
            began = time.monotonic()
            session = await client.open_session(
                ref.split, ref.index, secrets=self.options.secrets or None, toolset=self.options.toolset
            )
            built = time.monotonic()  # the env's constructor has returned: the request timeout bounds the rest
            try:
                try:
                    listed = await _task_tools(client, session.sid)
                except Exception as exc:  # client and transport errors have no common base
                    if not await _setup_failed(session, exc):
                        raise
                    self.unready.append((ref, self._describe(exc), False))
                    return None
                now = time.monotonic()
                left = min(timeout - (now - began), self.clock.request_timeout - (now - built)) - CLOSING_SECONDS
                try:
                    messages = await asyncio.wait_for(session.get_messages(), max(left, 0.1))
                except Exception as exc:  # client and transport errors have no common base
                    self.unready.append((ref, self._why_unready(exc, left), True))
                else:
                    self.conversations.append(conversation_of(messages))
                return listed
            finally:
                await session.close()

        try:
            listed = self.clock.run(
                lambda timeout: self.connection.run(lambda c: probe(c, timeout), timeout), building=starting_seconds()
            )
        except Exception as exc:  # client and transport errors have no common base
            raise self._fail(
                f"the probe session on task {ref.split}[{ref.index}] failed: {self._describe(exc)}"
                f"{'' if isinstance(exc, Hung) else _probe_advice(sorted(self.options.secrets))}"
            ) from exc  # a hung server's message names the variable of its bound: no secret helps there
        return None if listed is None else _tool_specs(listed)

    def _why_unready(self, exc: BaseException, left: float) -> str:
        if isinstance(exc, TimeoutError):
            return f"setup did not finish within {max(left, 0.1):.0f} s"
        return self._describe(exc)

    def _note_unready(self) -> None:
        """One line when some probe's setup failed: the prompt's shape is unknown, and so are the
        task-only tools of a task whose setup failed before its session listed them."""
        if not self.unready:
            return
        ref, why, _ = self.unready[0]
        count = len(self.unready)
        others = f" (and {count - 1} other probe{'s' * (count > 2)})" if count > 1 else ""
        listed = (
            "every tool was listed"
            if all(listed for *_, listed in self.unready)
            else "every shared tool was listed, but task-only tools could not be listed on those tasks"
        )
        note = self.options.note or _log.warning
        note(
            f"{self.target.value}: setup failed on task {ref.split}[{ref.index}]{others}: "
            f"{clean(why, self.options.secrets)}; {listed}, and the conversation is unknown "
            "(recorded as a plain prompt)"
            + (
                ""
                if self.options.secrets
                else "; if setup needs a secret, pass it with --secret NAME (the adapter's sessions need it too)"
            )
        )

    def _tasks(self, split: Split) -> tuple[SplitTasks, list[dict[str, Any]]]:
        """The split's tasks as stored in the snapshot, and every task read (see `sampling.reads`)."""
        runs, coverage = reads(split.num_tasks, self.options.tasks)
        tasks = self._read(split, runs) if runs else []
        return SplitTasks(coverage=coverage, tasks=[] if coverage == "none" else tasks), [task.spec for task in tasks]

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
            answer = self._call(
                lambda client: client.request("POST", client.route("/task_range"), _range(split, start, stop))
            )
            tasks = answer.get("tasks") if isinstance(answer, dict) else answer
        except Exception as exc:  # client and transport errors have no common base
            if _status(exc) not in UNSUPPORTED:
                raise self._fail(f"cannot read tasks {where}: {self._describe(exc)}") from exc
            tasks = [self._task(split, i) for i in range(start, stop)]
        if not isinstance(tasks, list) or len(tasks) != stop - start:
            count = len(tasks) if isinstance(tasks, list) else type(tasks).__name__
            raise self._fail(f"asked for tasks {where} ({stop - start}), the server sent {count}")
        for i, spec in enumerate(tasks):
            if not isinstance(spec, dict):
                raise self._fail(f"task {split}[{start + i}] is not a JSON object")
        return tasks

    def _task(self, split: str, index: int) -> Any:
        answer = self._ask(f"read task {split}[{index}]", "POST", "/task", {"split": split, "index": index})
        return answer.get("task") if isinstance(answer, dict) else None


def _probe_advice(secrets: list[str]) -> str:
    """The way out of a failed probe. `--probes 0` skips the sessions, not the env's need for
    its secret: the snapshot records the names given with it, and the adapter sends them at
    `reset`, so the advice keeps `--secret` whichever way out is taken."""
    if secrets:
        return (
            f" (secrets sent: {', '.join(secrets)}). Check their values; or skip probing with --probes 0, which "
            "captures no task-only tools (keep --secret: the snapshot records its name for the adapter's reset)"
        )
    return (
        ". If the environment needs a secret (an API key its setup reads), pass it with --secret NAME; "
        "or skip probing with --probes 0, which captures no task-only tools (pass the --secret NAME it needs all "
        "the same: the snapshot records its name for the adapter's reset)"
    )


def _quoted(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _range(split: str, start: int, stop: int) -> dict[str, Any]:
    return {"split": split, "start": start, "stop": stop}


async def _setup_failed(session: Any, exc: BaseException) -> bool:
    """Whether `exc`, a session's `/task_tools` failure, is its setup's: a server error that the
    session's conversation, which waits for setup, answers alike (the same status and detail).
    Any other failure of `/task_tools` stays the probe's."""
    status = _status(exc)
    if status is None or status < 500:
        return False
    try:
        await session.get_messages()
    except Exception as again:  # client and transport errors have no common base
        return _status(again) == status and getattr(again, "detail", None) == getattr(exc, "detail", None)
    return False


async def _task_tools(client: Client, sid: str) -> Any:
    """A session's `/task_tools` answer; a server without it (404) gives its `/tools`."""
    try:
        return await client.request("GET", client.route("/task_tools"), sid=sid)
    except Exception as exc:
        if _status(exc) != 404:
            raise
        return await client.request("GET", client.route("/tools"), sid=sid)


def _declared_splits(answer: Any) -> list[tuple[str, str | None]] | None:
    """`/splits`' answer as (name, type) pairs, the type kept only when it is not the one the
    name implies (`implied_split_type`); None when the answer is no list of splits. A bare
    name (an older server) has the type its name implies."""
    if not isinstance(answer, list):
        return None
    declared: list[tuple[str, str | None]] = []
    for split in answer:
        name, kind = (split.get("name"), split.get("type")) if isinstance(split, dict) else (split, None)
        if not isinstance(name, str) or not name:
            return None
        declared.append((name, kind if isinstance(kind, str) and kind != implied_split_type(name) else None))
    return declared


def _tool_specs(answer: Any) -> Any:
    """The tool list of a `/tools` or `/task_tools` answer, each tool an object with `name`,
    `description` and `input_schema` (what `_unique_tools` checks); anything else as it is,
    for `_unique_tools` to refuse."""
    tools = answer.get("tools") if isinstance(answer, dict) else None
    if not isinstance(tools, list):
        return None
    return [
        (
            SimpleNamespace(
                name=tool.get("name"), description=tool.get("description"), input_schema=tool.get("input_schema")
            )
            if isinstance(tool, dict)
            else tool
        )
        for tool in tools
    ]


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
        input_schema=spec.input_schema or None,
        shared=shared,
        offered_on=offered_on,
    )


def _schema_of(spec: Any) -> tuple[str, str]:
    return (spec.description or "", json.dumps(spec.input_schema, sort_keys=True))


@contextmanager
def _no_progress(label: str, total: int) -> Iterator[Any]:
    yield lambda n: None
