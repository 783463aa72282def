"""Snapshot → ModulePlan: every name, type and docstring of a generated module, decided once.

This is the boundary where untrusted text from the server becomes code. Names become
`PythonIdentifier`/`ClassName`; strings become `Source` (a Python literal, escaped here); prose
is made safe for the docstring parser TRL uses (`transformers.utils.get_json_schema`). Templates
receive nothing else, so they never escape anything themselves.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any

from . import names
from .names import ClassName, PythonIdentifier
from .runtime.adapter import STATE_ATTRIBUTES, EnvAdapter
from .runtime.dataset import RESERVED_COLUMNS, RESERVED_PREFIX
from .runtime.fingerprint import fingerprint
from .schema import (
    JSON,
    SchemaError,
    check_refs,
    constraints,
    json_types,
    python_hint,
    resolve,
    shape,
    strip_keywords,
    subschemas,
    without_titles,
)
from .snapshot import Snapshot

# Names a tool method may not take: TRL's special methods, the adapter's state and API.
RESERVED_METHODS = frozenset({"reset", "get_reward", *STATE_ATTRIBUTES, *dir(EnvAdapter)})
# Module-level names a generated model class may not take.
RESERVED_CLASSES = frozenset({"Any", "Literal", "BaseModel", "ConfigDict", "Field", "RootModel", "TaskSpec"})

_SECTION = re.compile(r"(Args|Returns|Raises):")
_CHOICES = re.compile(r"\(choices:", re.IGNORECASE)


class Source(str):
    """Python source text that is safe to paste into a template as is."""


def literal(value: Any) -> Source:
    """A Python literal for a JSON-like value (str, number, bool, None, list, dict, tuple)."""
    return Source(repr(value))


@dataclass(frozen=True)
class Param:
    wire: Source  # the property name the server expects, as a literal
    name: PythonIdentifier
    hint: Source
    required: bool


@dataclass(frozen=True)
class ToolPlan:
    wire: Source
    method: PythonIdentifier
    renamed: bool  # the method's name differs from the wire name, which is set as __name__
    params_class: ClassName | None
    params: tuple[Param, ...]
    docstring: Source
    shared: bool
    fingerprint: Source  # of the description and schema, for the runtime drift guard


@dataclass(frozen=True)
class ColumnPlan:
    name: Source
    field: Source
    as_json: bool


@dataclass(frozen=True)
class ModulePlan:
    snapshot_file: Source
    sha256: Source
    env_class: ClassName
    env_var: Source
    env_var_name: str  # upper-case identifier characters only
    target: tuple[Source, Source, Source]  # kind, value, env key
    description: Source  # the module docstring
    tools: tuple[ToolPlan, ...]
    num_tasks: Source  # {split: count}
    default_split: Source
    columns: tuple[ColumnPlan, ...]
    models_schema: JSON  # one JSON Schema bundle: every params model and TaskSpec, for dcg
    models_aliases: dict[str, str]  # non-ASCII property name → model field name, for dcg
    terminal_tool: Source  # literal wire name or None


@dataclass(frozen=True)
class MixtureMember:
    module: PythonIdentifier  # the member's module, a sibling of the mixture module
    env_class: ClassName
    key: Source  # its name in `environments` and in the dataset's `environment` column


@dataclass(frozen=True)
class MixturePlan:
    name: PythonIdentifier
    description: Source
    members: tuple[MixtureMember, ...]


def plan_mixture(name: str, snapshots: list[Snapshot]) -> MixturePlan:
    """A module that hands several environments to one trainer: `environment_factory` as a dict."""
    members = tuple(
        MixtureMember(names.slug(s.name), names.class_name(s.name, suffix="Env"), literal(names.slug(s.name)))
        for s in sorted(snapshots, key=lambda s: s.name)
    )
    summary = (
        f"A mixture of ORS environments for one GRPOTrainer: {', '.join(m.module for m in members)}.\n\n"
        "Import it as a package module (`from generated import " + names.slug(name) + "`): it imports its\n"
        "members from the same directory. Regenerate with `orlgen generate`."
    )
    return MixturePlan(name=names.slug(name), description=_docstring(summary, indent=""), members=members)


def plan(snapshot: Snapshot) -> ModulePlan:
    # Every order below is the canonical one, whatever the input's. `ordered` keeps the hash the
    # snapshot came with: re-hashing every task would cost more than the render itself.
    snapshot = snapshot.ordered().model_copy(update={"sha256": snapshot.sha256})
    env_class = names.class_name(snapshot.name, suffix="Env")
    env_var = f"ORLGEN_{names.slug(snapshot.name).upper()}_URL"
    tools, bundle = _plan_tools(snapshot, taken_classes=RESERVED_CLASSES | {env_class})
    bundle["TaskSpec"] = without_titles(snapshot.task_schema)
    split_names = [split.name for split in snapshot.splits]
    return ModulePlan(
        snapshot_file=literal(snapshot.file_name),
        sha256=literal(snapshot.sha256),
        env_class=env_class,
        env_var=literal(env_var),
        env_var_name=env_var,
        target=(literal(snapshot.target.kind), literal(snapshot.target.value), literal(snapshot.target.env)),
        description=_docstring(_module_summary(snapshot), indent=""),
        tools=tools,
        num_tasks=literal({split.name: split.num_tasks for split in snapshot.splits}),
        default_split=literal("train" if "train" in split_names else (split_names or ["train"])[0]),
        columns=_columns(snapshot.task_schema),
        models_schema={"$defs": dict(sorted(bundle.items()))},
        models_aliases=_unicode_aliases(bundle),
        terminal_tool=literal(snapshot.terminal_tool.name if snapshot.terminal_tool else None),
    )


def _module_summary(snapshot: Snapshot) -> str:
    captured = ", ".join(
        f"{split.name} ({split.num_tasks} tasks, {snapshot.tasks[split.name].coverage} captured)"
        for split in snapshot.splits
        if split.name in snapshot.tasks
    )
    return (
        f"Typed TRL adapter for the ORS environment {snapshot.target.value!r}.\n\n"
        f"Splits: {captured or 'none'}.\n"
        f"Regenerate with `orlgen generate`; re-capture with `orlgen snapshot {snapshot.target.value}`."
    )


def _plan_tools(snapshot: Snapshot, taken_classes: frozenset[str]) -> tuple[tuple[ToolPlan, ...], dict[str, JSON]]:
    taken_methods: set[str] = set(RESERVED_METHODS)
    classes: set[str] = set(taken_classes)
    plans: list[ToolPlan] = []
    bundle: dict[str, JSON] = {}
    for tool in sorted(snapshot.tools, key=lambda t: t.name):
        where = f"tool {tool.name!r}"
        schema = tool.input_schema or {}
        check_refs(schema, where)
        method = names.identifier(tool.name, taken=taken_methods)
        taken_methods.add(method)
        params = _params(schema, where) if schema.get("properties") else ()
        params_class = None
        if params:
            params_class = names.class_name(tool.name, suffix="Params", taken=classes)
            classes.add(params_class)
            bundle.update(_relocate(_for_models(schema), params_class))
        plans.append(
            ToolPlan(
                wire=literal(tool.name),
                method=method,
                renamed=method != tool.name,
                params_class=params_class,
                params=tuple(param for param, _ in params),
                docstring=_tool_docstring(tool.name, tool.description, params),
                shared=tool.shared,
                fingerprint=literal(fingerprint(tool.description, tool.input_schema)),
            )
        )
    return tuple(plans), bundle


def _for_models(schema: JSON) -> JSON:
    """The schema handed to datamodel-code-generator: no titles, and no `pattern` that pydantic's
    regex engine refuses (the model would fail at import). Such a pattern still reaches the
    model in the parameter's description, and the server still enforces it."""
    return strip_keywords(
        schema, lambda key, value: key == "title" or (key == "pattern" and not _pattern_compiles(value))
    )


@lru_cache(maxsize=1024)
def _pattern_compiles(pattern: Any) -> bool:
    from pydantic import StringConstraints, TypeAdapter

    try:
        TypeAdapter(Annotated[str, StringConstraints(pattern=pattern)])
    except Exception:  # noqa: BLE001 - pydantic reports bad patterns with several error types
        return False
    return True


def _params(schema: JSON, where: str) -> tuple[tuple[Param, str], ...]:
    """Each property as a parameter and its one-line description, required ones first."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SchemaError(f"{where}: 'properties' is not an object")
    required = set(schema.get("required") or [])
    taken: set[str] = {"self"}
    out = []
    for wire in sorted(properties, key=lambda w: (w not in required, w)):
        sub = properties[wire]
        name = names.identifier(wire, taken=taken)
        taken.add(name)
        param = Param(literal(wire), name, Source(python_hint(sub, schema)), wire in required)
        out.append((param, _param_doc(wire, name, sub, schema, param.required)))
    return tuple(out)


def _param_doc(wire: str, name: str, sub: Any, root: JSON, required: bool) -> str:
    sub = sub if isinstance(sub, dict) else {}
    # A `$ref`'s own description describes this parameter; the referenced schema's, its type.
    target = resolve(sub, root)
    text = sub.get("description") or (target.get("description") if isinstance(target, dict) else None) or ""
    parts = [text or f"The {wire} argument."]
    if json_types(sub, root) & {"object", "array"} and "{" in (structure := shape(sub, root)):
        parts.append(f"Structure: {structure}.")
    found = constraints(sub, root)
    if found:
        parts.append(f"Constraints: {', '.join(found)}.")
    if "default" in sub:
        parts.append(f"Default: {_json_text(sub['default'])}.")
    elif not required:
        parts.append("Optional.")
    if wire != name:
        parts.append(f"Sent as {wire!r}.")
    return _safe(_one_line(" ".join(p.rstrip(".") + "." for p in parts)))


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _tool_docstring(wire: str, description: str, params: tuple[tuple[Param, str], ...]) -> Source:
    summary = _safe(inspect.cleandoc(description)) if description.strip() else f"Call the {_safe(wire)} tool."
    lines = [line.rstrip() for line in summary.splitlines()]
    lines = [line for i, line in enumerate(lines) if line or (i and lines[i - 1])]  # no double blanks
    if params:
        lines += ["", "Args:"] + [f"    {param.name}: {doc}" for param, doc in params]
    return _docstring("\n".join(lines).strip("\n"), indent="        ")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _safe(text: str) -> str:
    """Prose that the Google-docstring parser reads back as written: no section header that
    would cut it short, no trailing `(choices: ...)` that it would parse as JSON, no tabs."""
    return _CHOICES.sub("(choices :", _SECTION.sub(r"\1 :", text.expandtabs(4)))


def _docstring(text: str, indent: str) -> Source:
    """A triple-quoted literal of `text`, lines after the first indented to `indent`."""
    lines = _escape(text).split("\n")
    body = lines[0] + "".join(f"\n{indent}{line}" if line else "\n" for line in lines[1:])
    closing = f"\n{indent}" if len(lines) > 1 else ""
    return Source(f'"""{body}{closing}"""')


def _escape(text: str) -> str:
    """Escape for a `\"\"\"` literal: backslashes, unprintable characters, and any quote that
    could join another or end the literal early."""
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == '"' and (i + 1 == len(text) or text[i + 1] == '"'):
            out.append('\\"')
        elif char == "\n" or char.isprintable():
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def _relocate(schema: JSON, class_name: str) -> dict[str, JSON]:
    """A tool's schema as bundle entries: itself under `class_name`, each of its `$defs` under
    `class_name` + def name, with every `$ref` rewritten to match."""
    local_defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    moved = {name: f"{class_name}{names.class_name(name)}" for name in sorted(local_defs)}

    def pointer(ref: str) -> str:
        parts = ref.lstrip("#").split("/")[1:] if ref != "#" else []
        if len(parts) >= 2 and parts[0] in ("$defs", "definitions") and parts[1] in moved:
            return "/".join(["#/$defs", moved[parts[1]], *parts[2:]])
        return "/".join(["#/$defs", class_name, *parts])

    def rewrite(node: Any) -> Any:
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        if not isinstance(node, dict):
            return node
        return {
            key: pointer(value) if key == "$ref" and isinstance(value, str) else rewrite(value)
            for key, value in node.items()
            if key not in ("$defs", "definitions")
        }

    out = {class_name: rewrite(schema)}
    for name, sub in local_defs.items():
        out[moved[name]] = rewrite(sub)
    return out


def _unicode_aliases(bundle: dict[str, JSON]) -> dict[str, str]:
    """ASCII field names for non-ASCII property names. Python reads identifiers NFKC-normalised
    (`ﬁle` is `file`), so a field named as the property would expect another key on the wire;
    with an explicit field name, datamodel-code-generator keeps the property as the alias."""
    found: set[str] = set()

    def collect(schema: Any) -> None:
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            found.update(schema["properties"])
        for sub in subschemas(schema):
            collect(sub)

    for schema in bundle.values():
        collect(schema)
    taken = {name for name in found if name.isascii()}
    aliases = {}
    for name in sorted(n for n in found if not n.isascii()):
        aliases[name] = names.identifier(name, taken=taken)
        taken.add(aliases[name])
    return aliases


def _columns(task_schema: JSON) -> tuple[ColumnPlan, ...]:
    fields = sorted((task_schema.get("properties") or {}).items())
    taken = set(RESERVED_COLUMNS)
    out = []
    for field, sub in fields:
        name = field
        while name in taken:
            name = f"{RESERVED_PREFIX}{name}"
        taken.add(name)
        out.append(ColumnPlan(literal(name), literal(field), not _arrow_safe(sub, task_schema)))
    return tuple(out)


def _arrow_safe(schema: Any, root: JSON) -> bool:
    """Whether every value the schema admits fits one Arrow type (nulls aside)."""
    branches = schema.get("anyOf") or schema.get("oneOf") if isinstance(schema, dict) else None
    if isinstance(branches, list):
        concrete = [b for b in branches if json_types(b, root) != {"null"}]
        if len(concrete) == 1:
            return _arrow_safe(concrete[0], root)
    types = json_types(schema, root) - {"null"}
    if types == {"integer", "number"}:
        return True
    if len(types) != 1:
        return False
    (kind,) = types
    if kind == "object":
        properties = schema.get("properties") or {}
        return bool(properties) and all(_arrow_safe(sub, root) for sub in properties.values())
    if kind == "array":
        items = schema.get("items")
        return not isinstance(items, dict) or _arrow_safe(items, root)
    return True
