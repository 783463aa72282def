"""The snapshot: everything orlgen knows about an environment, as canonical JSON.

It is the one intermediate form of the pipeline. Capture writes it; everything downstream reads
only it. The JSON is canonical (sorted keys, lists in a defined order, 2-space indent, trailing
newline, no timestamps) so that the same environment always gives the same bytes and a
reviewer's diff shows only real changes. `sha256` covers every other field.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import OrlgenError

if TYPE_CHECKING:
    from .schema import Schema

FORMAT_VERSION = 1
SUFFIX = ".snapshot.json"
RewardRule = Literal["outcome", "summed"]


class SnapshotError(OrlgenError, ValueError):
    """A snapshot file is missing, malformed, or was edited by hand."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


class Split(_Model):
    name: str
    num_tasks: int


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

    @model_validator(mode="before")
    @classmethod
    def _declared_order(cls, data: Any) -> Any:
        """A tool built from a server's answer records its order; one loaded from a file has it."""
        from .schema import declared_order, json_problem

        if isinstance(data, dict) and (problem := json_problem(data.get("input_schema"))):
            raise ValueError(f"input_schema {problem}")
        if isinstance(data, dict) and "property_order" not in data:
            return {**data, "property_order": declared_order(data.get("input_schema"))}
        return data

    def parsed_schema(self) -> Schema:
        """The input schema, parsed and sanitised, its properties in the declared order."""
        from .schema import parse_schema

        return parse_schema(self.input_schema, f"tool {self.name!r}", self.property_order)


class TerminalTool(_Model):
    name: str
    arg: str | None
    description: str


class Task(_Model):
    index: int
    spec: dict[str, Any]


class SplitTasks(_Model):
    """Captured tasks of one split: `all` of them, a `sample`, or `none`."""

    coverage: Literal["all", "sample", "none"]
    tasks: list[Task]


_TOKEN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,79}$"  # what `orlgen.runtime.provenance` keeps


class Deployment(_Model):
    """Which deployment of the env was captured, as its server reported it at `/version` (see
    `orlgen.runtime.provenance`): the openreward SDK it runs and its build commit, if set."""

    sdk_version: str | None = Field(default=None, pattern=_TOKEN)
    build_sha: str | None = Field(default=None, pattern=_TOKEN)


class Snapshot(_Model):
    format_version: int = FORMAT_VERSION
    name: str
    target: Target
    # Names of the secrets the environment's sessions need (values are never stored); generated
    # adapters forward them from the environment. Left out of the JSON when empty.
    secret_names: list[str] = Field(default_factory=list, exclude_if=lambda names: not names)
    # How step rewards make the episode's score, as the environment documents it: "outcome" (the
    # last non-null step reward) or "summed". The user declares it (`--reward`, config `reward`);
    # generated adapters default to it. Left out of the JSON at the default "outcome".
    reward: RewardRule = Field("outcome", exclude_if=lambda rule: rule == "outcome")
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
    tasks: dict[str, SplitTasks]
    task_schema: dict[str, Any]
    sha256: str = ""

    @field_validator("task_schema", mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        from .schema import json_problem

        if problem := json_problem(value):
            raise ValueError(f"task_schema {problem}")
        return value

    @model_validator(mode="after")
    def _check(self) -> Snapshot:
        if self.format_version != FORMAT_VERSION:
            raise ValueError(f"format_version {self.format_version} is not supported (expected {FORMAT_VERSION})")
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
                "sha256": "",
            }
        )

    def canonical(self) -> Snapshot:
        """`ordered()`, with its hash filled in."""
        ordered = self.ordered()
        return ordered.model_copy(update={"sha256": _content_hash(ordered)})

    def to_json(self) -> str:
        return _dumps(self.canonical().model_dump())

    @property
    def file_name(self) -> str:
        return f"{self.name}{SUFFIX}"


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


def _content_hash(snapshot: Snapshot) -> str:
    body = snapshot.model_dump(exclude={"sha256"})  # every field is JSON already; python mode keeps any string
    return hashlib.sha256(_dumps(body).encode()).hexdigest()


def load(path: Path) -> Snapshot:
    """Read and verify a snapshot; any problem is a `SnapshotError` naming the file."""
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
        raise SnapshotError(f"{path}: not valid JSON: {str(exc).splitlines()[0]}") from exc
    try:
        snapshot = Snapshot.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "top level"
        raise SnapshotError(f"{path}: not a valid snapshot: {where}: {first['msg']}") from exc
    canonical = snapshot.canonical()
    if snapshot.sha256 != canonical.sha256:
        raise SnapshotError(
            f"{path}: sha256 does not match the content (edited by hand?); re-capture with `orlgen snapshot`"
        )
    return canonical


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
