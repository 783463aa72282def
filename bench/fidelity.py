"""Schema fidelity: how many facts of a tool's input JSON Schema reach the model.

For every tool of three schema sets (the repo's example envs, those captured in `generated/` and
those written the way published envs are, `examples/wordgrid.py` and `examples/icu_sepsis.py`; the
openreward SDK's built-in toolsets; hand-built hostile schemas) this extracts *schema facts* from
the tool's description and input JSON Schema and looks each one up in what the model is shown:
the JSON that `transformers.utils.get_json_schema(method)` produces for

- orlgen: the method of the module `orlgen.render.render_module` generates for a snapshot of the
  tools (imported from a temp file; methods = public functions of the env class, keyed by
  `fn.__name__`, as TRL collects them);
- TRL: the function `trl.experimental.openreward.environment._bind_tool_method` binds on a fresh
  `_RolloutEnvironment` subclass (binder or `get_json_schema` exceptions are caught and counted).

Only that JSON is read, never orlgen's internals, so the measure holds across rewrites of the
generator. The SDK set and the published-style envs list each tool as `Environment.list_tools`
would; a tool identical to one of an earlier toolset (BackSearch and Web share
`web_fetch`/`web_search`) is counted once.

Each fact is found **structurally** (a JSON Schema keyword says it: `type`, `enum`, `items`,
`prefixItems`, `additionalProperties`, `required`, `nullable`, `default`, `properties`, the
param's/tool's own `description`), **as text** (only a description string says it), or **lost**.

Facts (per tool): tool present (1). The description is read as the Google-style docstring it
usually is: its prose is the tool-description fact, its `Returns:` block a `returns` fact, and an
`Args:` entry (or an un-headed `name: text` line naming a parameter) is the description of a
parameter whose schema has none. Per top-level parameter:
its name (`param-name`);
each non-null JSON type it admits; each enum/const value, of the param or of its array items
(null excluded: that is nullability);
item type(s) of arrays (per position for tuples), value type of maps; required-ness (always one
fact: required or optional); nullability (if null is admitted); default (if the property has
one, `null` included); each constraint keyword (minimum, maximum, exclusive*, multipleOf,
min/maxLength, pattern, format, min/maxItems, uniqueItems, min/maxProperties) on the param or
its anyOf/oneOf branches; each nested object property (name + type; through `$ref`, anyOf,
array items; 3 levels deep; a `$ref` cycle stops the walk), and of each nested property its
description (`nested-description`: its own, else its definition's), each constraint keyword
(`nested-constraint`) and its default (`nested-default`); the parameter description (its own
`description`, else the one of the definition it `$ref`s).

Matching rules (documented, applied identically to both sides):

- A parameter is found by its wire name; else by a property whose description carries orlgen's
  `Sent as '<wire>'` note; else by a unique property whose name equals the wire name once both
  are lower-cased and stripped of non-alphanumerics (`file-path` ~ `file_path`, `from` ~
  `from_`). A parameter not found loses all its facts.
- Descriptions are compared with all whitespace removed (so re-indentation, re-flowing and
  orlgen's `Args:` -> `Args :` defusing still match); a description must appear whole.
  Found in its own place (param -> that param's `description`, tool -> the function's
  `description`) is structural; found elsewhere in the tool's JSON is text.
- Text matches for the other kinds look only in the parameter's model-facing description and
  need a recognisable phrase: type words (`string`/`str`, `integer`/`int`, ...), enum values as
  JSON/Python literals, `[<type>` or `list of <type>` for items, `required`/`optional`,
  `null`/`None`, `default: <value>`, constraint phrases (`>= 1`, `at most 50 characters`,
  `minimum 1`, the pattern itself, ...), and for nested properties `<name>: <type>` or
  `<name>?: <type>` where `<type>` starts with a type word or a sign of one (`"..."` for
  string, a digit for numbers, `{` or `<Ref>` for objects, `[` for arrays). The position of a
  nested name inside the structure is not checked. A nested field's description, constraint or
  default must be said in that field's part of the description: from `<name>:` (or `<name>?:`)
  to the next sibling field's name (a constraint phrase as above; a default as `= <value>` or
  `default: <value>`).

Besides found/lost, a shown fact is **altered** when its text changed on the way: a description or
Returns text not shown verbatim (runs of whitespace aside), or a parameter shown under another
name although a method can take its own (a keyword, a non-identifier or `self` must be renamed:
not counted).
**Prompt size** per module: characters of the tools JSON the model sees, each function dumped as
the chat template's `tojson` does, for orlgen, TRL, and the server's raw schemas shown as they are.
**Output blocks** (orlgen only): `bench/blocks_env.py` is served and captured, each of its tools is
called once through the generated adapter, and each block the server sent (text, image) is looked
up in what the method returned; the count of blocks not found is `dropped`.

Run: `python -m bench.fidelity [--json PATH]`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import itertools
import json
import keyword
import logging
import math
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from orlgen.schema import json_type
from pydantic import BaseModel, ConfigDict, Field, conint

REPO = Path(__file__).resolve().parent.parent
SETS = ("examples", "sdk-toolsets", "hostile")
KINDS = (
    "type",
    "enum",
    "items",
    "required",
    "nullable",
    "default",
    "constraint",
    "nested",
    "nested-description",
    "nested-constraint",
    "nested-default",
    "description",
    "returns",
    "param-name",
    "tool-present",
)
STATUSES = ("structural", "text", "lost")
NESTED_DEPTH = 3
CONSTRAINT_KEYS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
)

JSON = dict[str, Any]


# ── inputs ───────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class ToolSchema:
    name: str
    description: str
    input_schema: JSON | None
    shared: bool = True


@dataclass
class Group:
    """Tools that go into one generated module / one TRL class (tool names unique)."""

    set_name: str
    name: str  # an identifier-ish slug
    tools: list[ToolSchema]
    snapshot: Any = None  # an orlgen Snapshot to render as is (the example envs); else one is built


def example_groups() -> list[Group]:
    from orlgen.snapshot import load

    groups = []
    for name in ("echo", "helpdesk"):
        snapshot = load(REPO / "generated" / f"{name}.snapshot.json")
        tools = [ToolSchema(t.name, t.description, t.input_schema, t.shared) for t in snapshot.tools]
        groups.append(Group("examples", name, tools, snapshot))
    return groups


#: Example envs written the way published ORS envs are (Google docstrings, no Field descriptions).
PUBLISHED = (
    ("wordgrid", "examples.wordgrid", "WordGrid"),
    ("icu_sepsis", "examples.icu_sepsis", "IcuSepsisEnvironment"),
)


def _class_tools(cls: type) -> list[ToolSchema]:
    """The shared tools of an `Environment` class, as `Environment.list_tools` lists them: name =
    attribute name, description = stripped docstring, schema = the params model's JSON Schema."""
    from openreward.environments.environment import Environment, _introspect_tool

    tools = []
    for name in dir(cls):
        fn = getattr(cls, name)
        if not Environment._is_tool(fn) or not getattr(fn, "_env_tool_shared", True):
            continue
        _, hints, params = _introspect_tool(fn)
        schema = hints[params[0].name].model_json_schema() if params else None
        tools.append(ToolSchema(name, (fn.__doc__ or "").strip(), schema))
    return tools


def published_groups() -> list[Group]:
    groups = []
    for name, module, cls_name in PUBLISHED:
        cls = getattr(importlib.import_module(module), cls_name)
        groups.append(Group("examples", name, _class_tools(cls)))
    return groups


def sdk_groups() -> list[Group]:
    """One group per toolset exported by `openreward.toolsets`, its tools listed exactly as
    `Environment.list_tools` lists a declared toolset's tools (name = attribute name,
    description = stripped docstring, schema = the param model's `model_json_schema()`).
    A tool identical (name, description, schema) to one of an earlier toolset is counted once."""
    import openreward.toolsets as toolsets

    seen: set[str] = set()
    groups = []
    for cls_name in sorted(n for n in toolsets.__all__ if n != "BUILTIN_TOOLSETS"):
        tools = []
        for tool in _class_tools(getattr(toolsets, cls_name)):
            key = json.dumps([tool.name, tool.description, tool.input_schema], sort_keys=True)
            if key not in seen:
                seen.add(key)
                tools.append(tool)
        if tools:
            groups.append(Group("sdk-toolsets", _slug(cls_name), tools))
    return groups


# Hand-built hostile schemas (pydantic v2, as an ORS server would emit them).


class _Transfer(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    source: str = Field(alias="from", description="Account to move the money from.")
    to: str = Field(description="Account to move the money to.")
    amount: float = Field(gt=0, le=10_000, description="How much to move.")


class _Receipt(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    file_path: str | None = Field(
        None, alias="file-path", pattern=r"^/tmp/.+$", description="Where to write the receipt."
    )
    self_: int = Field(0, alias="self", ge=0, description="A parameter named self.")


class _Priority(IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3


class _Node(BaseModel):
    """A recursive tree."""

    label: str
    children: list[_Node] = Field(default_factory=list)


class _Circle(BaseModel):
    kind: Literal["circle"]
    radius: float = Field(gt=0)


class _Square(BaseModel):
    kind: Literal["square"]
    side: float = Field(gt=0)


class _Shapes(BaseModel):
    priority: _Priority = Field(description="An int enum, by $ref.")
    version: Literal["v1"] = Field(description="A const.")
    shape: Annotated[_Circle | _Square, Field(discriminator="kind")] = Field(description="A discriminated union.")
    point: tuple[int, int] | None = Field(None, description="An optional pair.")
    tree: _Node | None = Field(None, description="A recursive model.")


class _Answer(BaseModel):
    answer: str = Field(min_length=1, max_length=200, description="The final answer.")


class _Submit(_Answer):
    tags: list[Literal["math", "code", "prose"]] = Field(
        default_factory=list, max_length=3, description="Labels for the answer."
    )
    weights: dict[str, float] = Field(default_factory=dict, description="Per-criterion weights.")
    retries: conint(ge=0, le=5) | None = Field(3, description="Retry budget.")
    level: Literal[1, 2, 3] = Field(2, description="A literal int enum with a default.")


class _ShapeRef(BaseModel):
    shape_id: str = Field(description="Which shape.")


class _Search(BaseModel):
    query: str = Field(description="What to look for.")
    mode: str = Field("fast", description="How to search.\nNote: exhaustive mode is slow.\nArgs: are checked.")
    format: Literal["json", "text"] = Field("json", description="Output format.")
    pattern: str | None = Field(None, description="Optional glob filter.")


class _Lookup(BaseModel):
    key: str = Field(description="What to look up (choices: not json)")


def hostile_groups() -> list[Group]:
    """Each tool carries one trait that has broken a binder; the rich schemas (`draw`, `submit`,
    `search`) sit under plain names so that TRL's handling of them is measured too."""

    def t(name: str, description: str, model: type[BaseModel]) -> ToolSchema:
        return ToolSchema(name, description, model.model_json_schema())

    tools = [
        t("transfer", "Move money. A parameter is named `from` (a keyword).", _Transfer),
        t("save_receipt", "Save a receipt. Parameters `file-path` (no identifier) and `self`.", _Receipt),
        t("class", "Delete a shape. The tool name is a Python keyword.", _ShapeRef),
        t("draw", "Draw a shape: int enum, const, discriminated union, tuple | None, recursive model.", _Shapes),
        t("submit-solution", "Submit the final answer. The tool name is no identifier.", _Answer),
        t("submit", "Submit with metadata: enum items, a map, a constrained optional, an int Literal.", _Submit),
        t(
            "search",
            "Search the index. Args: are validated by the server, Returns: a list.\n\n"
            "Returns:\n    The hits, best first (choices: not json)",
            _Search,
        ),
        t("lookup", "Look a key up. Its parameter description ends in a `(choices: ...)` that is no JSON.", _Lookup),
    ]
    return [Group("hostile", "hostile", tools)]


def all_groups() -> list[Group]:
    return example_groups() + published_groups() + sdk_groups() + hostile_groups()


# ── schema facts ─────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Fact:
    set_name: str
    group: str
    tool: str
    kind: str
    path: str  # `param`, `param.nested[].leaf`, or `` for tool-level facts
    value: Any  # JSON-able
    siblings: tuple[str, ...] = field(default=(), compare=False)  # of a nested leaf: the other fields beside it

    def label(self) -> str:
        where = f"{self.tool}.{self.path}" if self.path else self.tool
        words = self.kind.endswith("description")
        value = self.value if isinstance(self.value, str) and not words else json.dumps(self.value)
        if words and len(value) > 60:
            value = value[:57] + '..."'
        return f"{self.kind:<12} {where}: {value}"


def _resolve(schema: Any, root: JSON) -> Any:
    if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
        return schema
    node: Any = root
    for part in schema["$ref"].lstrip("#").split("/"):
        if part:
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _branches(schema: Any, root: JSON, seen: frozenset[str] = frozenset()) -> list[JSON]:
    """The concrete alternatives of a schema: `$ref`s followed, anyOf/oneOf/allOf[1] flattened."""
    if not isinstance(schema, dict):
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return []
        return _branches(_resolve(schema, root), root, seen | {ref})
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        return [b for alt in alternatives for b in _branches(alt, root, seen)]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return _branches(all_of[0], root, seen)
    return [schema]


def _types(schema: Any, root: JSON) -> set[str]:
    """The JSON types a schema admits (`null` included); empty = anything."""
    if schema is True or schema == {} or not isinstance(schema, dict):
        return set()
    found: set[str] = set()
    branches = _branches(schema, root)
    if not branches:  # a reference cycle: whatever the definition is
        return {"object"}
    for b in branches:
        if "const" in b:
            t = {json_type(b["const"])}
        elif isinstance(b.get("enum"), list):
            t = {json_type(v) for v in b["enum"]}
        elif isinstance(b.get("type"), str):
            t = {b["type"]}
        elif isinstance(b.get("type"), list):
            t = set(b["type"])
        elif "properties" in b:
            t = {"object"}
        elif "items" in b or "prefixItems" in b:
            t = {"array"}
        else:
            return set()
        found |= t
    return found


def _is_array(b: JSON) -> bool:
    return b.get("type") == "array" or "items" in b or "prefixItems" in b


def _enum_values(branches: list[JSON]) -> list[Any]:
    values = []
    for b in branches:
        if "const" in b:
            values.append(b["const"])
        elif isinstance(b.get("enum"), list):
            values.extend(b["enum"])
    unique = {json.dumps(v, sort_keys=True): v for v in values if v is not None}
    return list(unique.values())


@dataclass
class NestedField:
    """What the schema says about one nested property: its types, the siblings it sits among,
    and its own words and limits (description, constraint keywords, default)."""

    types: set[str] = field(default_factory=set)
    siblings: tuple[str, ...] = ()
    description: str = ""
    constraints: dict[tuple[str, str], Any] = field(default_factory=dict)
    default: list[Any] = field(default_factory=list)  # [value] when the property has one

    def merge(self, other: NestedField) -> None:
        self.types |= other.types
        self.siblings = tuple(dict.fromkeys(self.siblings + other.siblings))
        self.description = self.description or other.description
        for key, value in other.constraints.items():
            self.constraints.setdefault(key, value)
        self.default = self.default or other.default


def _constraints_of(branches: list[JSON]) -> dict[tuple[str, str], Any]:
    found: dict[tuple[str, str], Any] = {}
    for b in branches:
        for key in CONSTRAINT_KEYS:
            value = b.get(key)
            if key in b and value is not False and not (key.startswith("exclusive") and value is True):
                found.setdefault((key, json.dumps(value)), value)
    return found


def _description_of(sub: Any, root: JSON) -> str:
    """A property's own `description`, else the one of the definition it `$ref`s."""
    description = sub.get("description") if isinstance(sub, dict) else None
    if not description and isinstance(sub, dict) and "$ref" in sub:
        description = (_resolve(sub, root) or {}).get("description")
    return description.strip() if isinstance(description, str) else ""


def _nested(schema: Any, root: JSON, prefix: str, depth: int, seen: frozenset[str]) -> dict[str, NestedField]:
    """Nested property path → what the schema says of it, through refs, anyOf and array items;
    cycles stop."""
    out: dict[str, NestedField] = {}

    def add(found: dict[str, NestedField]) -> None:
        for path, info in found.items():
            out.setdefault(path, NestedField()).merge(info)

    if not isinstance(schema, dict) or depth > NESTED_DEPTH:
        return out
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return out
        return _nested(_resolve(schema, root), root, prefix, depth, seen | {ref})
    for alt in (schema.get("anyOf") or schema.get("oneOf") or []) + (schema.get("allOf") or []):
        add(_nested(alt, root, prefix, depth, seen))
    properties = schema.get("properties")
    if isinstance(properties, dict) and depth < NESTED_DEPTH:
        for name, sub in properties.items():
            path = f"{prefix}.{name}"
            info = NestedField(
                types=_types(sub, root) - {"null"} or {"any"},
                siblings=tuple(n for n in properties if n != name),
                description=_description_of(sub, root),
                constraints=_constraints_of(_branches(sub, root)),
                default=[sub["default"]] if isinstance(sub, dict) and "default" in sub else [],
            )
            add({path: info})
            add(_nested(sub, root, path, depth + 1, seen))
    items = schema.get("items")
    if isinstance(items, dict):
        add(_nested(items, root, f"{prefix}[]", depth, seen))
    return out


_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises)\s*:\s*$")
_ARG = re.compile(r"^(\S+?)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(text: str, params: Collection[str] = ()) -> tuple[str, dict[str, str], str]:
    """The Google-style parts of a tool description: prose, `Args:` entries by name, `Returns:`.

    A section starts at a line that is only its header (`Args:`); an entry starts at the section's
    first indentation, and deeper lines continue it. Outside sections, a line `name: text` whose
    name is one of `params` documents that parameter too (authors write such un-headed lines), and
    deeper lines continue it. The rest is prose."""
    prose: list[str] = []
    args: dict[str, list[str]] = {}
    returns: list[str] = []
    section, indent, current = None, None, None
    bare: list[str] | None = None  # the un-headed entry being read, and the indent of its line
    bare_indent = 0
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section, indent, current = header[1], None, None
            continue
        depth = len(line) - len(line.lstrip())
        if section is None:
            entry = _ARG.match(line.strip())
            if bare is not None and line.strip() and depth > bare_indent:
                bare.append(line.strip())
            elif entry and entry[1] in params and entry[1] not in args:
                bare, bare_indent = args.setdefault(entry[1], [entry[2]]), depth
            else:
                bare = None
                prose.append(line)
            continue
        if not line.strip():
            continue
        indent = depth if indent is None else indent
        if section in ("Args", "Arguments", "Parameters"):
            entry = _ARG.match(line.strip()) if depth <= indent else None
            if entry:
                current = entry[1]
                args[current] = [entry[2]]
            elif current is not None:
                args[current].append(line.strip())
        elif section == "Returns":
            returns.append(line.strip())
    squash = lambda parts: " ".join(" ".join(parts).split())  # noqa: E731
    prose_text = re.sub(r"\n{3,}", "\n\n", "\n".join(prose)).strip()  # lines taken out leave no gap
    return prose_text, {name: squash(words) for name, words in args.items()}, squash(returns)


def tool_facts(set_name: str, group: str, tool: ToolSchema) -> list[Fact]:
    def fact(kind: str, path: str, value: Any, siblings: tuple[str, ...] = ()) -> Fact:
        return Fact(set_name, group, tool.name, kind, path, value, siblings)

    facts = [fact("tool-present", "", tool.name)]
    root = tool.input_schema or {}
    prose, documented, returns = parse_docstring(tool.description.strip(), list(root.get("properties") or {}))
    if prose:
        facts.append(fact("description", "", prose))
    if returns:
        facts.append(fact("returns", "", returns))
    required = set(root.get("required") or [])
    for param, sub in (root.get("properties") or {}).items():
        facts.append(fact("param-name", param, param))
        branches = _branches(sub, root)
        types = _types(sub, root)
        facts += [fact("type", param, t) for t in sorted(types - {"null"})]
        facts += [fact("enum", param, v) for v in _enum_values(branches)]
        for b in branches:
            if not _is_array(b):
                continue
            fixed = (
                b.get("prefixItems")
                if isinstance(b.get("prefixItems"), list)
                else (b["items"] if isinstance(b.get("items"), list) else None)
            )
            if fixed is not None:
                for i, item in enumerate(fixed):
                    facts += [fact("items", f"{param}[{i}]", t) for t in sorted(_types(item, root) - {"null"})]
            elif isinstance(b.get("items"), dict):
                facts += [fact("items", f"{param}[]", t) for t in sorted(_types(b["items"], root) - {"null"})]
                facts += [fact("enum", f"{param}[]", v) for v in _enum_values(_branches(b["items"], root))]
        for b in branches:
            extra = b.get("additionalProperties")
            if b.get("type") == "object" and not b.get("properties") and isinstance(extra, dict) and extra:
                facts += [fact("items", f"{param}{{}}", t) for t in sorted(_types(extra, root) - {"null"})]
        facts.append(fact("required", param, "required" if param in required else "optional"))
        if "null" in types:
            facts.append(fact("nullable", param, True))
        if isinstance(sub, dict) and "default" in sub:
            facts.append(fact("default", param, sub["default"]))
        constraints = _constraints_of(branches)
        facts += [fact("constraint", param, {key: value}) for (key, _), value in constraints.items()]
        for path, info in _nested(sub, root, param, 0, frozenset()).items():
            facts.append(fact("nested", path, " | ".join(sorted(info.types)), info.siblings))
            if info.description:
                facts.append(fact("nested-description", path, info.description, info.siblings))
            facts += [
                fact("nested-constraint", path, {key: value}, info.siblings)
                for (key, _), value in info.constraints.items()
            ]
            facts += [fact("nested-default", path, value, info.siblings) for value in info.default]
        description = _description_of(sub, root) or documented.get(param, "").strip()
        if description:  # else the author may have documented it in the docstring instead
            facts.append(fact("description", param, description))
    return facts


# ── prompt size ──────────────────────────────────────────────────────────────


def prompt_chars(functions: list[JSON]) -> int:
    """Characters of the tools JSON the model is shown: each `get_json_schema(...)["function"]`
    wrapped and dumped as the chat template's `tojson` does (`json.dumps`, non-ASCII kept)."""
    return sum(len(json.dumps({"type": "function", "function": f}, ensure_ascii=False)) for f in functions)


def raw_prompt_chars(tools: list[Any]) -> int:
    """The same measure for the server's raw schemas, shown as they are: name, description,
    `input_schema` as the parameters (an empty object schema for a tool without parameters)."""
    return prompt_chars(
        [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema or {"type": "object", "properties": {}},
            }
            for t in tools
        ]
    )


# ── the model's view ─────────────────────────────────────────────────────────


@dataclass
class View:
    """What one binder shows the model for one group: wire name → function JSON, or why not."""

    functions: dict[str, JSON] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # wire name → reason
    extra: list[str] = field(default_factory=list)  # functions shown that are no tool of the group


def _get_schema(fn: Any) -> JSON:
    from transformers.utils import get_json_schema

    return get_json_schema(fn)["function"]


def _minimal_snapshot(group: Group) -> Any:
    from orlgen.snapshot import Snapshot, Split, SplitTasks, Target, Tool

    return Snapshot(
        name=f"fidelity_{group.name}",
        target=Target(kind="module", value=f"bench.fidelity:{group.name}", env=group.name),
        splits=[Split(name="train", num_tasks=1)],
        tools=[
            Tool(name=t.name, description=t.description, input_schema=t.input_schema, shared=t.shared)
            for t in group.tools
        ],
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="none", tasks=[])},
        task_schema={"properties": {"target": {"type": "string"}}, "required": ["target"], "type": "object"},
    ).canonical()


_module_counter = itertools.count()


def orlgen_view(group: Group, workdir: Path) -> View:
    from orlgen.render import render_module
    from orlgen.runtime.adapter import EnvAdapter

    view = View()
    try:
        snapshot = group.snapshot or _minimal_snapshot(group)
        module = _import_source(render_module(snapshot), workdir, group.name)
    except Exception as exc:  # any failure loses the whole group
        view.missing = {t.name: f"render/import failed: {_short(exc)}" for t in group.tools}
        return view
    (env_class,) = dict.fromkeys(
        v
        for v in vars(module).values()  # also bound as `environment_factory`
        if inspect.isclass(v) and issubclass(v, EnvAdapter) and v is not EnvAdapter
    )
    _collect(view, group, inspect.getmembers(env_class, inspect.isfunction))
    return view


def trl_view(group: Group) -> View:
    with warnings.catch_warnings():  # "You are importing from 'trl.experimental'"
        warnings.simplefilter("ignore")
        from trl.experimental.openreward import environment as trl_env

    view = View()
    cls = type(f"Fidelity_{group.name}", (trl_env._RolloutEnvironment,), {})
    logger = logging.getLogger(trl_env.__name__)
    level = logger.level
    logger.setLevel(logging.ERROR)  # the binder warns on every skipped tool
    try:
        for tool in group.tools:
            try:
                trl_env._bind_tool_method(
                    cls, {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema or {}}
                )
            except Exception as exc:
                view.missing[tool.name] = f"binder raised {_short(exc)}"
                continue
            if tool.name not in vars(cls):
                bad = [p for p in (tool.input_schema or {}).get("properties") or {} if not p.isidentifier()]
                view.missing[tool.name] = (
                    f"binder skipped it (non-identifier tool name {tool.name!r})"
                    if not tool.name.isidentifier()
                    else f"binder skipped it (non-identifier param name {bad[0]!r})" if bad else "binder skipped it"
                )
    finally:
        logger.setLevel(level)
    _collect(view, group, [(n, v) for n, v in vars(cls).items() if inspect.isfunction(v)])
    return view


def _collect(view: View, group: Group, members: list[tuple[str, Any]]) -> None:
    """Public functions (TRL's rule: no `_` prefix, not `reset`/`get_reward`), keyed by `__name__`."""
    wanted = {t.name for t in group.tools}
    for attr, fn in members:
        if attr.startswith("_") or attr in ("reset", "get_reward"):
            continue
        wire = fn.__name__
        if wire not in wanted:
            view.extra.append(wire)
            continue
        try:
            view.functions[wire] = _get_schema(fn)
        except Exception as exc:
            view.missing[wire] = f"get_json_schema raised {_short(exc)}"
    for tool in group.tools:
        if tool.name not in view.functions and tool.name not in view.missing:
            view.missing[tool.name] = "no method with this __name__"


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:100]}" if text else type(exc).__name__


# ── classification ───────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Outcome:
    fact: Fact
    status: str
    reason: str = ""
    altered: bool = False  # shown, but not as written (text changed, or a parameter renamed)


_TYPE_WORDS = {
    "string": r"string|str",
    "integer": r"integer|int",
    "number": r"number|float",
    "boolean": r"boolean|bool",
    "object": r"object|dict",
    "array": r"array|list|tuple",
    "null": r"null|None",
    "any": r"any|Any",
}
# What may start the text of a value of each type in a structure description.
_TYPE_STARTS = {
    "string": r"(?:string|str)\b|[\"']",
    "integer": r"(?:integer|int)\b|-?\d",
    "number": r"(?:number|float)\b|-?\d",
    "boolean": r"(?:boolean|bool|true|false|True|False)\b",
    "object": r"(?:object|dict)\b|\{|<\w",
    "array": r"(?:array|list|tuple)\b|\[",
    "null": r"(?:null|None)\b",
    "any": r"",
}


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _value_forms(value: Any) -> list[str]:
    if value is None:
        return ["null", "None"]
    if isinstance(value, bool):
        return ["true", "True"] if value else ["false", "False"]
    if isinstance(value, (int, float)):
        forms = [json.dumps(value), str(value)]
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            forms.append(str(int(value)))
        return list(dict.fromkeys(forms))
    if isinstance(value, str):
        return [json.dumps(value, ensure_ascii=False), repr(value), value] if value else ['""', "''"]
    return [json.dumps(value, ensure_ascii=False, sort_keys=True), json.dumps(value, ensure_ascii=False), repr(value)]


def _value_re(value: Any) -> str:
    end = r"(?!\w|\.\d)"  # `10` must not match `100` or `10.5`; a full stop may follow
    return "(?:" + "|".join(re.escape(f) + (end if f[-1:].isalnum() else "") for f in _value_forms(value)) + ")"


def _constraint_re(key: str, value: Any) -> str:
    v = _value_re(value)
    return {
        "minimum": rf"(?:>=|≥|at least|minimum(?: of| is)?:?|min(?:imum)?\s*[:=])\s*{v}",
        "maximum": rf"(?:<=|≤|at most|maximum(?: of| is)?:?|max(?:imum)?\s*[:=])\s*{v}",
        "exclusiveMinimum": rf"(?:(?<![<>=])>(?!=)|greater than|more than|exclusive minimum:?)\s*{v}",
        "exclusiveMaximum": rf"(?:(?<![<>=])<(?!=)|less than|fewer than|exclusive maximum:?)\s*{v}",
        "multipleOf": rf"multiple of\s*{v}",
        "minLength": rf"(?:(?:at least|exactly)\s*{v}\s*char|min(?:imum)?[ _-]?length\s*[:=]?\s*{v})",
        "maxLength": rf"(?:(?:at most|exactly)\s*{v}\s*char|max(?:imum)?[ _-]?length\s*[:=]?\s*{v})",
        "minItems": rf"(?:(?:at least|exactly)\s*{v}\s*(?:item|element|entr)|min(?:imum)?[ _-]?items\s*[:=]?\s*{v})",
        "maxItems": rf"(?:(?:at most|exactly)\s*{v}\s*(?:item|element|entr)|max(?:imum)?[ _-]?items\s*[:=]?\s*{v})",
        "minProperties": rf"(?:(?:at least|exactly)\s*{v}\s*(?:entr|propert|key)|min(?:imum)?[ _-]?properties\s*[:=]?\s*{v})",
        "maxProperties": rf"(?:(?:at most|exactly)\s*{v}\s*(?:entr|propert|key)|max(?:imum)?[ _-]?properties\s*[:=]?\s*{v})",
        "uniqueItems": r"unique",
        "pattern": re.escape(str(value)),
        "format": rf"(?:format\s*[:=]?\s*{v}|{v}\s*format)",
    }[key]


def _out_branches(node: Any) -> list[JSON]:
    if not isinstance(node, dict):
        return []
    alternatives = node.get("anyOf") or node.get("oneOf")
    if isinstance(alternatives, list):
        return [node] + [b for alt in alternatives for b in _out_branches(alt)]
    return [node]


def _out_types(node: Any) -> set[str]:
    found: set[str] = set()
    for b in _out_branches(node):
        t = b.get("type")
        found |= {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()
        if b.get("nullable") is True:
            found.add("null")
        if isinstance(b.get("enum"), list):
            found |= {json_type(v) for v in b["enum"]}
    return found


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _find_param(properties: JSON, wire: str) -> str | None:
    if wire in properties:
        return wire
    marked = [n for n, p in properties.items() if f"Sent as {wire!r}" in str(p.get("description", ""))]
    if len(marked) == 1:
        return marked[0]
    norm = re.sub(r"[^0-9a-z]", "", wire.lower())
    loose = [n for n in properties if re.sub(r"[^0-9a-z]", "", n.lower()) == norm]
    return loose[0] if len(loose) == 1 else None


def _texts(fn: JSON) -> list[str]:
    """Every description string of a function's JSON."""
    found = [str(fn.get("description") or "")]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "description" and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(fn.get("parameters"))
    walk(fn.get("return"))
    return found


def classify(fact: Fact, view: View) -> Outcome:
    """`_classify`, plus whether a shown fact was altered on the way: a description or Returns
    text that is not shown verbatim (whitespace runs aside), a parameter shown under another name
    although Python allows its own (keywords and non-identifiers must be renamed: not counted)."""
    outcome = _classify(fact, view)
    if outcome.status == "lost":
        return outcome
    fn = view.functions[fact.tool]
    if fact.kind == "param-name":  # a method must rename keywords, non-identifiers and `self`
        allowed = fact.value.isidentifier() and not keyword.iskeyword(fact.value) and fact.value != "self"
        altered = allowed and fact.value not in ((fn.get("parameters") or {}).get("properties") or {})
    elif fact.kind in ("description", "returns"):
        altered = not any(_spaced(fact.value) in _spaced(text) for text in _texts(fn))
    else:
        return outcome
    return Outcome(fact, outcome.status, outcome.reason, altered)


def _spaced(text: str) -> str:
    return " ".join(str(text).split())


def _classify(fact: Fact, view: View) -> Outcome:
    def lost(reason: str) -> Outcome:
        return Outcome(fact, "lost", reason)

    fn = view.functions.get(fact.tool)
    if fn is None:
        return lost(f"tool not shown: {view.missing.get(fact.tool, 'unknown')}")
    if fact.kind == "tool-present":
        return Outcome(fact, "structural")
    if fact.kind == "description" and not fact.path:
        return _classify_description(fact, str(fn.get("description") or ""), _texts(fn))
    if fact.kind == "returns":
        return _classify_description(fact, str((fn.get("return") or {}).get("description") or ""), _texts(fn))
    parameters = fn.get("parameters") or {}
    properties = parameters.get("properties") or {}
    wire = re.split(r"[.\[{]", fact.path, maxsplit=1)[0]
    name = _find_param(properties, wire)
    if name is None:
        return lost(f"param {wire!r} not shown (model sees {sorted(properties)})")
    out = properties[name]
    desc = str(out.get("description") or "")
    types = _out_types(out)

    def text_or_lost(pattern: str, flags: int = 0, what: str = "") -> Outcome:
        if pattern and re.search(pattern, desc, flags):
            return Outcome(fact, "text")
        return lost(what or f"model sees {_brief(out)}")

    if fact.kind == "param-name":
        return Outcome(fact, "structural")
    if fact.kind == "description":
        return _classify_description(fact, desc, _texts(fn))
    if fact.kind == "type":
        if fact.value in types:
            return Outcome(fact, "structural")
        return text_or_lost(rf"\b(?:{_TYPE_WORDS[fact.value]})\b")
    if fact.kind == "nullable":
        if "null" in types:
            return Outcome(fact, "structural")
        return text_or_lost(r"\b(?:null|None|nullable)\b")
    if fact.kind == "required":
        shown = name in (parameters.get("required") or [])
        if shown == (fact.value == "required"):
            return Outcome(fact, "structural")
        return text_or_lost(
            r"\brequired\b" if fact.value == "required" else r"\b(?:optional|default)\b",
            re.IGNORECASE,
            f"model marks it {'required' if shown else 'optional'}",
        )
    if fact.kind == "enum":
        nodes = _out_branches(out)
        if fact.path.endswith("[]"):  # an enum of array items
            nodes = [i for b in nodes if isinstance(b.get("items"), dict) for i in _out_branches(b["items"])]
        for b in nodes:
            if any(_same(v, fact.value) for v in b.get("enum") or []) or (
                "const" in b and _same(b["const"], fact.value)
            ):
                return Outcome(fact, "structural")
        forms = _value_forms(fact.value)
        quoted = [f for f in forms if not f[:1].isalnum() and f[:1] != "-"] if isinstance(fact.value, str) else forms
        return text_or_lost("|".join(re.escape(f) + (r"\b" if f[-1:].isalnum() else "") for f in quoted))
    if fact.kind == "default":
        if any("default" in b and _same(b["default"], fact.value) for b in _out_branches(out)):
            return Outcome(fact, "structural")
        return text_or_lost(rf"(?i:default(?:s| value)?(?:\s+is|\s+to)?)\s*[:=]?\s*{_value_re(fact.value)}")
    if fact.kind == "constraint":
        ((key, value),) = fact.value.items()
        if any(key in b and _same(b[key], value) for b in _out_branches(out)):
            return Outcome(fact, "structural")
        return text_or_lost(_constraint_re(key, value), re.IGNORECASE)
    if fact.kind == "items":
        suffix = fact.path[len(wire) :]
        position = re.fullmatch(r"\[(\d+)\]", suffix)
        for b in _out_branches(out):
            if position:
                fixed = b.get("prefixItems")
                if (
                    isinstance(fixed, list)
                    and int(position[1]) < len(fixed)
                    and fact.value in _out_types(fixed[int(position[1])])
                ):
                    return Outcome(fact, "structural")
            elif suffix == "{}":
                if fact.value in _out_types(b.get("additionalProperties")):
                    return Outcome(fact, "structural")
            elif fact.value in _out_types(b.get("items")):
                return Outcome(fact, "structural")
        start = _TYPE_STARTS[fact.value]
        if suffix == "{}":
            return text_or_lost(rf"(?:dict\[str,\s*|\{{\s*str\s*:\s*|values?:?\s*)(?:{start})")
        if position:
            return lost(f"model sees {_brief(out)}")
        return text_or_lost(rf"(?:\[\s*|list\[\s*|(?:list|array) of\s+)(?:{start})")
    leaf = re.split(r"[.\[\]{}]+", fact.path)[-1] or re.split(r"[.\[\]{}]+", fact.path)[-2]
    if fact.kind == "nested":
        if _nested_structural(out, fact.path[len(wire) :], fact.value):
            return Outcome(fact, "structural")
        starts = "|".join(_TYPE_STARTS[t] for t in fact.value.split(" | ") if _TYPE_STARTS[t])
        after = rf"\s*(?:{starts})" if starts and "any" not in fact.value else ""
        return text_or_lost(rf"(?<![\w-]){re.escape(leaf)}\??\s*:{after}")
    if fact.kind.startswith("nested-"):
        return _classify_nested_words(fact, out, fact.path[len(wire) :], leaf, desc)
    raise AssertionError(fact.kind)


def _classify_nested_words(fact: Fact, out: JSON, rest: str, leaf: str, desc: str) -> Outcome:
    """A nested field's description, constraint or default: structural when the shown schema has
    it at that field (get_json_schema cannot), text when the parameter's description says it in
    the field's own part: from `leaf:` (or `leaf?:`) to the next sibling field's name."""
    nodes = [b for node in _nested_nodes(out, rest) for b in _out_branches(node)]
    if fact.kind == "nested-description":
        if any(_squash(fact.value) in _squash(str(b.get("description") or "")) for b in nodes):
            return Outcome(fact, "structural")
        return _in_part(fact, desc, leaf, lambda part: _squash(fact.value) in _squash(part))
    if fact.kind == "nested-constraint":
        ((key, value),) = fact.value.items()
        if any(key in b and _same(b[key], value) for b in nodes):
            return Outcome(fact, "structural")
        pattern = re.compile(_constraint_re(key, value), re.IGNORECASE)
        return _in_part(fact, desc, leaf, lambda part: pattern.search(part) is not None)
    if any("default" in b and _same(b["default"], fact.value) for b in nodes):
        return Outcome(fact, "structural")
    pattern = re.compile(rf"(?:=|(?i:default(?:s| value)?(?:\s+is|\s+to)?)\s*[:=]?)\s*{_value_re(fact.value)}")
    return _in_part(fact, desc, leaf, lambda part: pattern.search(part) is not None)


def _in_part(fact: Fact, desc: str, leaf: str, says: Any) -> Outcome:
    """`text` when some part of `desc` that belongs to the field `leaf` says the fact."""
    marker = re.compile(rf"(?<![\w-]){re.escape(leaf)}\??\s*:")
    others = [re.compile(rf"(?<![\w-]){re.escape(name)}\??\s*:") for name in fact.siblings]
    for found in marker.finditer(desc):
        ends = [m.start() for other in others if (m := other.search(desc, found.end()))]
        if says(desc[found.end() : min(ends, default=len(desc))]):
            return Outcome(fact, "text")
    return Outcome(fact, "lost", f"not said in the part of the description about {leaf!r}: {desc[:100]!r}")


def _nested_nodes(out: JSON, rest: str) -> list[JSON]:
    """The shown schema's nodes at a nested path (`.field`, `[]` steps) below a parameter."""
    nodes = [out]
    for step in re.findall(r"\.[^.\[\]]+|\[\]", rest):
        nxt = []
        for node in nodes:
            for b in _out_branches(node):
                if step == "[]" and isinstance(b.get("items"), dict):
                    nxt.append(b["items"])
                elif step.startswith(".") and isinstance(b.get("properties"), dict) and step[1:] in b["properties"]:
                    nxt.append(b["properties"][step[1:]])
        nodes = nxt
    return nodes


def _nested_structural(out: JSON, rest: str, types: str) -> bool:
    wanted = set(types.split(" | "))
    return any(wanted <= (_out_types(n) | {"any"}) for n in _nested_nodes(out, rest))


def _classify_description(fact: Fact, own: str, everywhere: list[str]) -> Outcome:
    source = _squash(fact.value)
    if source in _squash(own):
        return Outcome(fact, "structural")
    if any(source in _squash(text) for text in everywhere):
        return Outcome(fact, "text")
    # The longest prefix shown anywhere, for the reason.
    lo, hi = 0, len(source)
    joined = [_squash(t) for t in everywhere]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if any(source[:mid] in t for t in joined):
            lo = mid
        else:
            hi = mid - 1
    shown = own.strip()
    return Outcome(
        fact,
        "lost",
        f"only {lo} of {len(source)} non-space chars shown; model's text: "
        f"{(shown[:80] + '...') if len(shown) > 80 else shown!r}",
    )


def _brief(out: JSON) -> str:
    shown = {k: v for k, v in out.items() if k != "description"}
    text = json.dumps(shown, sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."


# ── measurement ──────────────────────────────────────────────────────────────


@dataclass
class Result:
    outcomes: dict[str, list[Outcome]]  # binder ("orlgen" / "trl") → one outcome per fact
    tools: Counter  # set → number of tools
    extra: dict[str, list[str]]  # binder → functions shown that are no tool
    prompt: dict[str, dict[str, int]] = field(default_factory=dict)  # "set/group" → raw/orlgen/trl chars
    blocks: dict[str, dict[str, int]] = field(default_factory=dict)  # block type → sent/dropped (orlgen)
    seconds: float = 0.0

    def altered(self, binder: str, set_name: str | None = None, kind: str | None = None) -> list[Outcome]:
        return [
            o
            for o in self.outcomes[binder]
            if o.altered and (set_name is None or o.fact.set_name == set_name) and (kind is None or o.fact.kind == kind)
        ]

    def counts(self, binder: str, set_name: str | None = None, kind: str | None = None) -> dict[str, int]:
        found = Counter(
            o.status
            for o in self.outcomes[binder]
            if (set_name is None or o.fact.set_name == set_name) and (kind is None or o.fact.kind == kind)
        )
        return {status: found[status] for status in STATUSES}

    def lost(self, binder: str, set_name: str | None = None) -> list[Outcome]:
        return [
            o for o in self.outcomes[binder] if o.status == "lost" and (set_name is None or o.fact.set_name == set_name)
        ]

    def facts(self, set_name: str | None = None, kind: str | None = None) -> int:
        return sum(self.counts("orlgen", set_name, kind).values())

    def to_json(self) -> JSON:
        def block(set_name: str | None = None, kind: str | None = None) -> JSON:
            return {
                "facts": self.facts(set_name, kind),
                "orlgen": self.counts("orlgen", set_name, kind),
                "trl": self.counts("trl", set_name, kind),
                "altered": {b: len(self.altered(b, set_name, kind)) for b in ("orlgen", "trl")},
            }

        return {
            "sets": {s: {"tools": self.tools[s], **block(s)} for s in SETS},
            "total": {"tools": sum(self.tools.values()), **block()},
            "by_kind": {k: block(kind=k) for k in KINDS},
            "lost": {
                binder: [
                    {
                        "set": o.fact.set_name,
                        "group": o.fact.group,
                        "tool": o.fact.tool,
                        "kind": o.fact.kind,
                        "path": o.fact.path,
                        "value": o.fact.value,
                        "reason": o.reason,
                    }
                    for o in self.lost(binder)
                ]
                for binder in ("orlgen", "trl")
            },
            "extra_functions": self.extra,
            "prompt_chars": self.prompt,
            "output_blocks": self.blocks,
        }


def output_blocks(workdir: Path) -> dict[str, dict[str, int]]:
    """Blocks of tool outputs that reach the model, by block type: `sent` by the server, `dropped`
    on the way. `bench/blocks_env.py` is served on a loopback port and captured; each tool is
    called once through the generated adapter, and each block it sent is looked up in what the
    method returned: a text block by its text (in the returned string or a text part), an image
    block as an image part of a returned list (the content part TRL hands to a VLM)."""
    from orlgen.capture import capture
    from orlgen.render import render_module
    from orlgen.serve import ServerProcess

    from bench.blocks_env import BLOCKS

    counts = {kind: {"sent": 0, "dropped": 0} for kind in ("text", "image")}
    with ServerProcess("bench.blocks_env:Blocks") as server:
        module = _import_source(render_module(capture(server.url)), workdir, "blocks")
        env = module.environment_factory(base_url=server.url)
        env.reset(task_index=0)
        for tool, blocks in BLOCKS.items():
            returned = getattr(env, tool)()
            for block in blocks:
                counts[block.type]["sent"] += 1
                counts[block.type]["dropped"] += not _block_shown(block, returned)
        env.get_reward()  # ends the session
    return counts


def _block_shown(block: Any, returned: Any) -> bool:
    parts = returned if isinstance(returned, list) else [{"type": "text", "text": str(returned)}]
    if block.type == "image":
        return any(isinstance(p, dict) and p.get("type") == "image" for p in parts)
    return any(isinstance(p, dict) and p.get("type") == "text" and block.text in str(p.get("text")) for p in parts)


def _import_source(source: str, workdir: Path, label: str) -> Any:
    name = f"_fidelity_orlgen_{next(_module_counter)}_{label}"
    path = workdir / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def measure(groups: list[Group] | None = None, with_blocks: bool = True) -> Result:
    started = time.perf_counter()
    groups = all_groups() if groups is None else groups
    outcomes: dict[str, list[Outcome]] = {"orlgen": [], "trl": []}
    extra: dict[str, list[str]] = {"orlgen": [], "trl": []}
    tools: Counter = Counter()
    prompt: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="orlgen-fidelity-") as tmp:
        for group in groups:
            views = {"orlgen": orlgen_view(group, Path(tmp)), "trl": trl_view(group)}
            prompt[f"{group.set_name}/{group.name}"] = {
                "raw": raw_prompt_chars(group.tools),
                **{binder: prompt_chars(list(view.functions.values())) for binder, view in views.items()},
            }
            for binder, view in views.items():
                extra[binder] += [f"{group.name}:{name}" for name in view.extra]
            for tool in sorted(group.tools, key=lambda t: t.name):
                tools[group.set_name] += 1
                for fact in tool_facts(group.set_name, group.name, tool):
                    for binder, view in views.items():
                        outcomes[binder].append(classify(fact, view))
        blocks = output_blocks(Path(tmp)) if with_blocks else {}
    return Result(outcomes, tools, extra, prompt, blocks, time.perf_counter() - started)


# ── report ───────────────────────────────────────────────────────────────────


def _row(label: str, tools: Any, facts: int, orl: dict[str, int], trl: dict[str, int]) -> str:
    cells = [f"{orl[s]:>6}" for s in STATUSES] + [f"{trl[s]:>6}" for s in STATUSES]
    return f"{label:<19}{tools:>6}{facts:>7}   " + " ".join(cells[:3]) + "   " + " ".join(cells[3:])


def report(result: Result) -> str:
    header = (
        f"{'':<19}{'':>6}{'':>7}   {'orlgen':^20}   {'TRL OpenRewardSpec':^20}\n"
        f"{'schema set':<19}{'tools':>6}{'facts':>7}   "
        + " ".join(f"{s[:6]:>6}" for s in STATUSES)
        + "   "
        + " ".join(f"{s[:6]:>6}" for s in STATUSES)
    )
    lines = ["Schema facts reaching the model (transformers.utils.get_json_schema of each tool method)", "", header]
    for s in SETS:
        lines.append(_row(s, result.tools[s], result.facts(s), result.counts("orlgen", s), result.counts("trl", s)))
    lines.append(
        _row("total", sum(result.tools.values()), result.facts(), result.counts("orlgen"), result.counts("trl"))
    )
    lines += ["", "By fact kind (all sets)", header.replace("schema set", "fact kind ").replace("tools", "     ")]
    for k in KINDS:
        lines.append(_row(k, "", result.facts(kind=k), result.counts("orlgen", kind=k), result.counts("trl", kind=k)))
    lines += [
        "",
        "Facts altered on the way (shown, but not as written: text changed, parameter renamed)",
        f"{'schema set':<14}{'orlgen':>8}{'TRL':>8}",
    ]
    for s in SETS:
        lines.append(f"{s:<14}{len(result.altered('orlgen', s)):>8}{len(result.altered('trl', s)):>8}")
    lines.append(f"{'total':<14}{len(result.altered('orlgen')):>8}{len(result.altered('trl')):>8}")
    lines += [f"  [{o.fact.set_name}/{o.fact.group}] {o.fact.label()}" for o in result.altered("orlgen")]
    lines += [
        "",
        "Prompt size: characters of the tools JSON the model sees (chat template `tojson`), per module",
        f"{'module':<34}{'raw':>8}{'orlgen':>8}{'TRL':>8}{'orlgen/raw':>12}{'orlgen/TRL':>12}",
    ]
    for name, sizes in result.prompt.items():
        lines.append(
            f"{name:<34}{sizes['raw']:>8}{sizes['orlgen']:>8}{sizes['trl']:>8}"
            f"{_ratio(sizes['orlgen'], sizes['raw']):>12}{_ratio(sizes['orlgen'], sizes['trl']):>12}"
        )
    if result.blocks:
        lines += [
            "",
            "Output blocks reaching the model (bench/blocks_env.py through the generated adapter)",
            f"{'block type':<14}{'sent':>8}{'dropped':>9}",
        ]
        lines += [f"{kind:<14}{n['sent']:>8}{n['dropped']:>9}" for kind, n in result.blocks.items()]
    for binder, title in (("orlgen", "orlgen"), ("trl", "TRL")):
        lost = result.lost(binder)
        lines += ["", f"Facts {title} loses: {len(lost)}"]
        if binder == "orlgen":
            lines += [f"  [{o.fact.set_name}/{o.fact.group}] {o.fact.label()}\n      -> {o.reason}" for o in lost]
        else:
            by_reason = Counter(
                (o.fact.set_name, o.reason if o.reason.startswith("tool not shown") else f"{o.fact.kind}") for o in lost
            )
            lines += [f"  {n:>4}  [{s}] {r}" for (s, r), n in sorted(by_reason.items(), key=lambda x: (-x[1], x[0]))]
    for binder, names in result.extra.items():
        if names:
            lines.append(f"\nFunctions {binder} shows that are no tool: {names}")
    return "\n".join(lines)


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    result = measure()
    print(report(result))
    print(f"\nmeasured in {result.seconds:.1f} s")
    if args.json:
        args.json.write_text(
            json.dumps(result.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return 0


def _slug(text: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
