"""The snapshot: everything orlgen knows about an environment, as canonical JSON.

It is the one intermediate form of the pipeline. Capture writes it; everything downstream reads
only it. It is two files (format 2): `<name>.snapshot.json`, the interface a reviewer reads
(target, splits, tools, task schema; canonical JSON: sorted keys, lists in a defined order,
2-space indent, trailing newline, no timestamps), and `<name>.tasks.jsonl`, the stored tasks,
one canonical JSON object per line (`{"index": .., "spec": {..}, "split": ..}`, in split and
index order), written only when some task is stored. The interface records the tasks file's
sha256 (`tasks_sha256`) and each split's stored count, and its own `sha256` covers every other
field of it, so one hash seals both files. A re-capture's review diff shows the interface
before the task rows (`echo.snapshot.json` sorts before `echo.tasks.jsonl`).

Format 1 (one file, the tasks inline) still loads; `generate` and the next `snapshot` rewrite it
as format 2, and `check` names the command that does (`orlgen generate`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from orlgen import lookalike
from orlgen.errors import OrlgenError
from orlgen.names import MAX_WIRE_NAME_LENGTH
from orlgen.runtime.data import tasks_file
from orlgen.runtime.data.dataset import TASKS_SUFFIX, tasks_path
from orlgen.runtime.data.reward import ALIASES, RewardRule
from orlgen.runtime.errors import first_line
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

if TYPE_CHECKING:
    from orlgen.schema import Schema

FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)  # format 1: one file, its tasks inline
SUFFIX = ".snapshot.json"
__all__ = ["TASKS_SUFFIX", "tasks_path"]  # re-exported: the generator names the tasks file through here


class SnapshotError(OrlgenError, ValueError):
    """A snapshot file is missing, malformed, or was edited by hand."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Reward(_Model):
    """The env's reward rule as recorded (`orlgen.runtime.RewardRule`: its docstring says what
    each part means). JSON: the reduction's name alone (`"sum"`), or an object when the rule has
    a penalty or a clamp (`{"reduce": "mean", "unfinished": -1.0, "clamp": [0.0, 1.0]}`). A name
    stays as written, so a snapshot that recorded `summed` (orlgen < 0.3) keeps its hash; it
    means `sum`, and `rule` is what everything downstream reads."""

    reduce: str = "last"
    unfinished: float | None = None
    clamp: tuple[float, float] | None = None

    @classmethod
    def declared(cls, reduce: str, unfinished: float | None = None, clamp: str | list[float] | None = None) -> Reward:
        """The rule a user declares (`--reward`, `--unfinished-reward`, `--reward-clamp LO:HI`, or
        the config's keys, where the clamp may also be `[LO, HI]`), its reduction named as 0.3
        names it (`summed` is written `sum`). ValueError in one line for anything else."""
        if isinstance(clamp, str):
            low, colon, high = clamp.partition(":")
            try:
                clamp = [float(low), float(high)] if colon else None
            except ValueError:
                clamp = None
            if clamp is None:
                raise ValueError("reward clamp must be LO:HI, two numbers, e.g. 0:1")
        reduce = ALIASES.get(reduce, reduce)
        try:
            return cls(reduce=reduce, unfinished=unfinished, clamp=clamp)  # type: ignore[arg-type]
        except ValidationError as exc:
            raise ValueError(first_line(str(exc.errors()[0]["msg"]).removeprefix("Value error, "))) from None

    @model_validator(mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return {"reduce": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _valid(self) -> Reward:
        """A rule the runtime would refuse is refused here, in the runtime's one line."""
        RewardRule(self.reduce, self.unfinished, self.clamp)  # type: ignore[arg-type]
        return self

    @model_serializer(mode="wrap")
    def _written(self, handler: SerializerFunctionWrapHandler) -> Any:
        if self.unfinished is None and self.clamp is None:
            return self.reduce
        return {key: value for key, value in handler(self).items() if value is not None}

    @property
    def rule(self) -> RewardRule:
        return RewardRule(self.reduce, self.unfinished, self.clamp)  # type: ignore[arg-type]

    @property
    def is_default(self) -> bool:
        return self.rule == RewardRule()


class Target(_Model):
    """Where the environment was captured from, and where generated code connects by default.

    `catalog`: an OpenReward platform name (`Owner/Env`); `url`: a single-host ORS server;
    `module`: an `Environment` subclass (`pkg.mod:Class`), which has no default address.
    `env` is the environment's key on the server (its class name, lower-cased).
    """

    kind: Literal["catalog", "url", "module"]
    value: str
    env: str


class TaskRef(_Model):
    split: str
    index: int


# The split types ORS declares (`openreward.environments.Split.type`), and the type a server
# gives a split it was handed as a bare name: its own name for these three, else "validation".
SPLIT_TYPES = ("train", "validation", "test")


def implied_split_type(name: str) -> str:
    return name if name in SPLIT_TYPES else "validation"


class Split(_Model):
    """A split and its task count. `type` is what `/splits` declares (`train`, `validation`,
    `test`) when it is not the type the split's name implies (`implied_split_type`), so every
    snapshot written before types were kept still reads, and reads the same."""

    name: str
    num_tasks: int
    type: str | None = Field(default=None, pattern=r"^[a-z][a-z_-]{0,31}$", exclude_if=lambda kind: kind is None)

    @property
    def kind(self) -> str:
        """The split's declared type."""
        return self.type or implied_split_type(self.name)


def bounded_wire_name(name: str) -> str:
    """`name`, or a ValueError naming its first characters: a wire name longer than
    `MAX_WIRE_NAME_LENGTH` is refused wherever a snapshot is built (capture, load), since it
    cannot be shortened and would be written into every module several times over."""
    if len(name) <= MAX_WIRE_NAME_LENGTH:
        return name
    from orlgen.schema import printable

    raise ValueError(
        f"the tool name '{printable(name, 43)}' is {len(name)} characters long: "
        f"at most {MAX_WIRE_NAME_LENGTH} are recorded"
    )


class Tool(_Model):
    """One tool as the server describes it.

    `shared` tools are listed by `/tools`; task-only tools appear in a session's tool list on
    some tasks, recorded in `offered_on` (among the probed tasks). `property_order` keeps the
    order in which the server declared each object's properties (by JSON pointer), which the
    canonical, key-sorted JSON would lose: the generated signatures follow it.
    """

    name: str
    description: str
    input_schema: dict[str, Any] | None
    shared: bool
    offered_on: list[TaskRef] = Field(default_factory=list)
    property_order: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _bounded_name(cls, name: str) -> str:
        return bounded_wire_name(name)

    @model_validator(mode="before")
    @classmethod
    def _declared_order(cls, data: Any) -> Any:
        """A tool built from a server's answer records its order; one loaded from a file has it."""
        from orlgen.schema import declared_order, json_problem

        if isinstance(data, dict) and (problem := json_problem(data.get("input_schema"))):
            raise ValueError(f"input_schema {problem}")
        if isinstance(data, dict) and "property_order" not in data:
            return {**data, "property_order": declared_order(data.get("input_schema"))}
        return data

    def parsed_schema(self) -> Schema:
        """The input schema, parsed and sanitised, its properties in the declared order."""
        from orlgen.schema import parse_schema

        return parse_schema(self.input_schema, f"tool {self.name!r}", self.property_order)

    def parameter_names(self) -> list[str]:
        """The wire names of the tool's parameters, in the declared order."""
        schema = self.parsed_schema()
        return [name for name, _ in schema.resolve(schema.root).properties]


class TerminalTool(_Model):
    name: str
    arg: str | None
    description: str

    @field_validator("name")
    @classmethod
    def _bounded_name(cls, name: str) -> str:
        return bounded_wire_name(name)


class Task(_Model):
    index: int
    spec: dict[str, Any]


class SplitTasks(_Model):
    """Captured tasks of one split: `all` of them, a `sample`, or `none`."""

    coverage: Literal["all", "sample", "none"]
    tasks: list[Task]
    # The count the interface records, on a snapshot loaded without its rows (`load(rows=False)`,
    # for `check` and `generate`, which read the tasks file as bytes); None when `tasks` holds them.
    stored: int | None = Field(default=None, exclude=True)

    @property
    def count(self) -> int:
        """How many tasks of the split the snapshot stores."""
        return len(self.tasks) if self.stored is None else self.stored


_TOKEN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,79}$"  # what `orlgen.runtime.ors.provenance` keeps


class Deployment(_Model):
    """Which deployment of the env was captured, as its server reported it at `/version` (see
    `orlgen.runtime.ors.provenance`): the openreward SDK it runs and its build commit, if set."""

    sdk_version: str | None = Field(default=None, pattern=_TOKEN)
    build_sha: str | None = Field(default=None, pattern=_TOKEN)


class Snapshot(_Model):
    format_version: int = FORMAT_VERSION
    name: str
    target: Target
    # Names of the secrets the environment's sessions need (values are never stored); generated
    # adapters forward them from the environment. Left out of the JSON when empty.
    secret_names: list[str] = Field(default_factory=list, exclude_if=lambda names: not names)
    # How step rewards make the rollout's reward, as the environment documents it (`Reward`).
    # The user declares it (`--reward`, `--unfinished-reward`, `--reward-clamp`, or config);
    # every trainer's module and eval apply it. Left out of the JSON at the default, `last`.
    reward: Reward = Field(Reward(), exclude_if=lambda reward: reward.is_default)
    # URL and catalog targets only; left out of the JSON when the server reported nothing.
    deployment: Deployment | None = Field(default=None, exclude_if=lambda found: found is None)
    splits: list[Split]
    tools: list[Tool]
    terminal_tool: TerminalTool | None
    # The env serves its prompt as role-tagged messages (ORS `get_messages`) and, when every
    # probed task's conversation opens with the same system message, its text. Left out of the
    # JSON at their defaults.
    conversation: bool = Field(default=False, exclude_if=lambda shaped: not shaped)
    system_prompt: str | None = Field(default=None, exclude_if=lambda text: text is None)
    probed_tasks: list[TaskRef]
    # The built-in toolset the sessions were opened with (`--toolset`; the SDK's `toolset=`), and
    # whether the env scores groups of completions (`supports_score_group` in `/tools`). Left out
    # of the JSON at their defaults.
    toolset: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_-]{0,63}$", exclude_if=lambda name: name is None)
    score_group: bool = Field(default=False, exclude_if=lambda supported: not supported)
    tasks: dict[str, SplitTasks]
    task_schema: dict[str, Any]
    # The sha256 of the tasks file's bytes (format 2), when some task is stored; in memory, set
    # by `canonical()` and `load`. Left out of the JSON when no task is stored.
    tasks_sha256: str | None = Field(default=None, exclude_if=lambda digest: digest is None)
    sha256: str = ""

    @field_validator("task_schema", mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        from orlgen.schema import json_problem

        if problem := json_problem(value):
            raise ValueError(f"task_schema {problem}")
        return value

    @model_validator(mode="after")
    def _check(self) -> Snapshot:
        if self.format_version not in READABLE_FORMATS:
            raise ValueError(
                f"format_version {self.format_version} is not supported (this orlgen reads {READABLE_FORMATS}): "
                "upgrade orlgen"
            )
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise ValueError("two tools share one name")
        return self

    def ordered(self) -> Snapshot:
        """The same content in canonical order (sorted lists, sorted schema keys)."""
        return self.model_copy(
            update={
                "splits": sorted(self.splits, key=lambda s: s.name),
                "tools": [
                    tool.model_copy(
                        update={
                            "offered_on": sorted(set(tool.offered_on), key=_ref_key),
                            "input_schema": _sorted_keys(tool.input_schema),
                        }
                    )
                    for tool in sorted(self.tools, key=lambda t: t.name)
                ],
                "task_schema": _sorted_keys(self.task_schema),
                "probed_tasks": sorted(set(self.probed_tasks), key=_ref_key),
                "tasks": {
                    split: captured.model_copy(update={"tasks": sorted(captured.tasks, key=lambda t: t.index)})
                    for split, captured in sorted(self.tasks.items())
                },
                "tasks_sha256": None,
                "sha256": "",
            }
        )

    def canonical(self) -> Snapshot:
        """`ordered()` in the current format, with both hashes filled in."""
        return self.sealed()[0]

    def sealed(self) -> tuple[Snapshot, bytes]:
        """The canonical snapshot and its tasks file's bytes, each serialised and hashed once."""
        if not self.rows_read:
            raise AssertionError("a snapshot loaded without its rows cannot be sealed again")
        ordered = self.ordered().model_copy(update={"format_version": FORMAT_VERSION})
        rows = ordered.rows_text().encode()
        digest = hashlib.sha256(rows).hexdigest() if rows else None
        hashed = ordered.model_copy(update={"tasks_sha256": digest})
        return hashed.model_copy(update={"sha256": _interface_hash(hashed)}), rows

    def rows_text(self) -> str:
        """The tasks file's text for the rows as they are (canonical when the snapshot is)."""
        return tasks_file.encode(
            (split, task.index, task.spec) for split, captured in self.tasks.items() for task in captured.tasks
        )

    @property
    def rows_read(self) -> bool:
        return all(captured.stored is None for captured in self.tasks.values())

    def interface(self) -> dict[str, Any]:
        """The interface file's content: everything but the task rows, which it counts."""
        data = self.model_dump(exclude={"tasks"})
        data["tasks"] = {
            split: {"coverage": captured.coverage, "stored": captured.count} for split, captured in self.tasks.items()
        }
        return data

    def interface_text(self) -> str:
        """The interface file's text for the snapshot as it is (canonical when the snapshot is:
        `load` and `canonical()` return such, and their callers need not seal it again)."""
        return _dumps(self.interface())

    def to_json(self) -> str:
        """The interface file's text (canonical)."""
        return self.canonical().interface_text()

    def written(self, path: Path) -> tuple[Snapshot, dict[Path, bytes]]:
        """The canonical snapshot and both its files, the interface at `path` (the tasks file
        left out when no task is stored): what `snapshot` writes, each serialised once."""
        sealed, rows = self.sealed()
        return sealed, {path: sealed.interface_text().encode(), **({tasks_path(path): rows} if rows else {})}

    def files(self, path: Path) -> dict[Path, bytes]:
        """`written(path)`'s files."""
        return self.written(path)[1]

    @property
    def file_name(self) -> str:
        return f"{self.name}{SUFFIX}"


def confusing_names(tools: Iterable[Tool]) -> Iterator[tuple[str, str | None, str]]:
    """The names a model (or a reviewer) can read as other names, as (tool, parameter, why):
    tool names among the tools (parameter None), then each tool's parameter names among its
    parameters, tools in name order. `generate` reports them renamed and `vet` as findings: one
    scan, so the two never disagree."""
    tools = sorted(tools, key=lambda tool: tool.name)
    for name, why in sorted(lookalike.confusing(tool.name for tool in tools).items()):
        yield name, None, why
    for tool in tools:
        for parameter, why in sorted(lookalike.confusing(tool.parameter_names()).items()):
            yield tool.name, parameter, why


def _sorted_keys(value: Any) -> Any:
    """`value` with every object's keys in sorted order, as canonical JSON will store it, so a
    snapshot built in memory renders exactly like the same snapshot loaded from its file."""
    if isinstance(value, dict):
        return {key: _sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(item) for item in value]
    return value


def _ref_key(ref: TaskRef) -> tuple[str, int]:
    return (ref.split, ref.index)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(data: Any) -> str:
    """Canonical JSON text. A lone surrogate (which a server can send as `\\ud800`) cannot be
    written as UTF-8: it stays a `\\uXXXX` escape, so the record is faithful and the file valid."""
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _interface_hash(snapshot: Snapshot) -> str:
    """Format 2: the interface file's content without its own hash (the tasks file's hash is in it)."""
    body = snapshot.interface()
    del body["sha256"]
    return hashlib.sha256(_dumps(body).encode()).hexdigest()


def _inline_hash(snapshot: Snapshot) -> str:
    """Format 1: every field but the hash, task rows inline (the pure-Python `indent=2` encoder)."""
    body = snapshot.model_dump(exclude={"sha256"})  # every field is JSON already; python mode keeps any string
    return hashlib.sha256(_dumps(body).encode()).hexdigest()


def load(path: Path, rows: bool = True) -> Snapshot:
    """Read and verify a snapshot (both files of format 2, or a format-1 file); any problem is a
    `SnapshotError` naming the file. The result is canonical, in the current format.

    With `rows=False`, a format-2 snapshot's tasks file is not read (each split records its
    count, `SplitTasks.stored`): `check` and `generate` verify it as bytes (`tasks_text`), and
    not at all when the verdict cache holds it current."""
    data = _read_interface(path)
    if data.get("format_version") == 1:
        return _load_inline(path, data)
    recorded = data.get("tasks_sha256")
    found = _read_rows(path, recorded) if rows and isinstance(recorded, str) else None
    snapshot = _validate(path, _with_rows(path, data, found))
    canonical = snapshot.ordered().model_copy(update={"tasks_sha256": snapshot.tasks_sha256})
    if snapshot.format_version != FORMAT_VERSION or snapshot.sha256 != _interface_hash(canonical):
        raise SnapshotError(
            f"{path}: sha256 does not match the content (edited by hand?); re-capture with `orlgen snapshot`"
        )
    return canonical.model_copy(update={"sha256": snapshot.sha256})


def recorded_target(path: Path) -> Target | None:
    """The target a valid snapshot file records, or None when it is not valid. A format-2 file
    is read without its tasks (its seal covers their hash): `snapshot` asks this of the file it
    replaces, which only decides whether the capture may replace it."""
    try:
        data = _read_interface(path)
        if data.get("format_version") == 1:
            return _load_inline(path, data).target
        body = {key: value for key, value in data.items() if key != "sha256"}
        if data.get("sha256") != hashlib.sha256(_dumps(body).encode()).hexdigest():
            return None
        return Target.model_validate(data.get("target"))
    except (SnapshotError, ValidationError):
        return None


def _read_interface(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read snapshot: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise SnapshotError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    except _NonStandardJSON as exc:
        raise SnapshotError(f"{path}: not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise SnapshotError(f"{path}: not a valid snapshot: nested deeper than Python can read") from exc
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise SnapshotError(f"{path}: not valid JSON: {first_line(str(exc))}") from exc
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: not a valid snapshot: top level: not an object")
    return data


def _read_rows(path: Path, recorded: str) -> tasks_file.Rows:
    """The tasks file's rows, its bytes checked against the hash the interface records."""
    return _verified(path, recorded)[1]


def tasks_text(path: Path, recorded: str) -> str:
    """The text of the tasks file of the snapshot at `path`, verified: its bytes hash to
    `recorded` and the one reader (`tasks_file.decode`) accepts every line (`SnapshotError`
    naming the file and line if not). The bytes read are the bytes returned: no second read."""
    return _verified(path, recorded)[0].decode()


def _verified(path: Path, recorded: str) -> tuple[bytes, tasks_file.Rows]:
    rows_path = tasks_path(path)
    if rows_path.is_symlink() or (rows_path.exists() and not rows_path.is_file()):
        raise SnapshotError(f"{rows_path}: refused to read: not a regular file (a symbolic link or a special file)")
    try:
        data = rows_path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"{rows_path}: cannot read the tasks file {path.name} records: {exc.strerror}") from exc
    if hashlib.sha256(data).hexdigest() != recorded:
        raise SnapshotError(
            f"{rows_path}: sha256 does not match the one {path.name} records (edited by hand?); "
            "re-capture with `orlgen snapshot`, or restore both files from version control"
        )
    try:
        return data, tasks_file.decode(data)
    except tasks_file.TasksFileError as exc:
        raise SnapshotError(f"{rows_path}: not a valid tasks file: {exc}") from exc


def _with_rows(
    path: Path, data: dict[str, Any], rows: dict[str, list[tuple[int, dict[str, Any]]]] | None
) -> dict[str, Any]:
    """The interface's data with each split's rows in place of its stored count (or, without
    the rows, the count kept as `stored`)."""
    counted = data.get("tasks")
    if counted is None:
        return data  # the model names the missing field
    if not isinstance(counted, dict) or not all(isinstance(split, dict) for split in counted.values()):
        raise SnapshotError(f"{path}: not a valid snapshot: tasks: not an object of splits")
    if rows is None:
        return {**data, "tasks": {split: {**entry, "tasks": []} for split, entry in counted.items()}}
    if extra := sorted(rows.keys() - counted.keys()):
        raise SnapshotError(f"{tasks_path(path)}: holds tasks of the split {extra[0]!r}, which {path.name} lacks")
    tasks = {}
    for split, entry in counted.items():
        found = rows.get(split, [])
        if entry.get("stored") != len(found):
            raise SnapshotError(
                f"{path}: tasks.{split}.stored is {entry.get('stored')!r}, but {tasks_path(path).name} holds "
                f"{len(found)} task(s) of it"
            )
        rest = {key: value for key, value in entry.items() if key != "stored"}
        # `tasks_file.decode` has checked each row's types: built, not validated again, 20,000 at a time
        tasks[split] = {**rest, "tasks": [Task.model_construct(index=index, spec=spec) for index, spec in found]}
    return {**data, "tasks": tasks}


def _validate(path: Path, data: dict[str, Any]) -> Snapshot:
    try:
        return Snapshot.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise SnapshotError(f"{path}: not a valid snapshot: {where}: {first['msg']}") from exc


def _load_inline(path: Path, data: dict[str, Any]) -> Snapshot:
    """A format-1 snapshot (tasks inline), verified by its own hash, in the current format."""
    snapshot = _validate(path, data)
    if snapshot.tasks_sha256 is not None or snapshot.sha256 != _inline_hash(snapshot.ordered()):
        raise SnapshotError(
            f"{path}: sha256 does not match the content (edited by hand?); re-capture with `orlgen snapshot`"
        )
    return snapshot.canonical()


class _NonStandardJSON(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    """NaN, Infinity and -Infinity are not JSON, and the content hash cannot see them: pydantic
    dumps them as null, so a NaN edited in where the snapshot had null would keep its seal."""
    raise _NonStandardJSON(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    """A number too large for a float (`1e400`) would read as infinity: refused like Infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise _NonStandardJSON(f"{text[:40]} is out of range for a float")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A key given twice shows a reviewer one value while orlgen reads the other: refused."""
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _NonStandardJSON(f"the key {key[:80]!r} appears twice in one object")
        seen.add(key)
    raise AssertionError("unreachable: fewer keys than pairs means a repeated key")
