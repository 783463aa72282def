"""Snapshot → ModulePlan: every name, type and docstring of a generated module, decided once.

This is the boundary where untrusted text from the server becomes code. Schemas become
`Schema`s (sanitised, see `orlgen.schema`); names become `PythonIdentifier`/`ParamName`/
`ClassName`; strings become `Source` (a Python literal, escaped here); prose is made safe for
the docstring parser TRL uses. Templates receive nothing else, so they never escape anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from orlgen import names, runtime
from orlgen.names import ClassName, ParamName, PythonIdentifier
from orlgen.plan import docstrings, prose
from orlgen.plan.aliases import field_aliases
from orlgen.plan.bundle import Bundle
from orlgen.plan.columns import ColumnPlan, dataset_columns
from orlgen.plan.hints import python_hint
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import Source, docstring_literal, literal
from orlgen.runtime.adapter import STATE_ATTRIBUTES, EnvAdapter
from orlgen.runtime.fingerprint import fingerprint
from orlgen.schema import JSON, Dropped, Node, Schema, json_type, parse_schema, printable
from orlgen.snapshot import recorded
from orlgen.snapshot.model import Snapshot, Tool

# What the templates may import, by module: `orlgen.render.models` imports those a module uses.
TEMPLATE_IMPORTS: dict[str, tuple[str, ...]] = {
    "collections.abc": ("Mapping", "Sequence"),
    "pathlib": ("Path",),
    "typing": ("Any", "ClassVar", "Literal"),
    "orlgen.runtime": tuple(runtime.__all__),
}
# What datamodel-code-generator's models import (the bundle it is given needs no other name).
_MODEL_IMPORTS = ("Annotated", "Any", "BaseModel", "ConfigDict", "Field", "Literal", "RootModel")
# What the module template binds itself.
_MODULE_GLOBALS = (
    "SNAPSHOT_SHA256",
    "SPEC",
    "SPLITS",
    "TARGET",
    "TOOLS",
    "annotations",
    "build_dataset",
    "environment_factory",
    "require_contract",
    "reward_funcs",
)
# Every name a generated module binds at top level, whatever its tools. A tool method or a model
# class of the same name would shadow it: a method named `tool_method` replaces the decorator for
# the methods after it in the class body. Such a name is renamed like a keyword (the wire name is
# kept), and tests/test_module_names.py holds this table to what the checked-in modules bind.
MODULE_NAMES = frozenset(
    {*(name for members in TEMPLATE_IMPORTS.values() for name in members), *_MODEL_IMPORTS, *_MODULE_GLOBALS}
)
# Names a tool method may not take: TRL's special methods, the adapter's state and API, `spec`
# (which `EnvAdapter.__init_subclass__` sets on the class, over a method of that name), the module's names.
RESERVED_METHODS = frozenset({"reset", "get_reward", "spec", *STATE_ATTRIBUTES, *dir(EnvAdapter), *MODULE_NAMES})
# Names method signatures use in their hints: a parameter named like one would shadow it.
_HINT_NAMES = ("Any", "Literal", "JSONObject", "JSONArray", "ToolOutput")
# Module names a parameter default may use: a parameter of that name would shadow it.
_DEFAULT_NAMES = ("UNSET",)
# Module-level names a generated model class may not take.
RESERVED_CLASSES = MODULE_NAMES


@dataclass(frozen=True)
class Param:
    wire: Source  # the property name the server expects, as a literal
    name: ParamName
    hint: Source
    default: Source | None  # a literal, `UNSET` ("not given": nothing is sent), or None if required


@dataclass(frozen=True)
class ToolPlan:
    wire: Source
    method: PythonIdentifier
    renamed: bool  # the model is shown the wire name, which differs from the method's: set as __name__
    params_class: ClassName | None
    params: tuple[Param, ...]
    aliases: Source | None  # {wire name: parameter name} for parameters Python had to rename
    docstring: Source
    shared: bool
    fingerprint: Source  # of the description and schema, for the runtime drift guard
    offered_on: Source | None  # a task-only tool: the probed (split, index) tasks that offer it


@dataclass(frozen=True)
class TargetPlan:
    kind: Source
    value: Source
    env: Source


@dataclass(frozen=True)
class ModulePlan:
    snapshot_file: Source
    sha256: Source
    env_class: ClassName
    env_var: Source
    env_var_name: str  # upper-case identifier characters only
    target: TargetPlan
    description: Source  # the module docstring
    tools: tuple[ToolPlan, ...]
    num_tasks: Source  # {split: count}
    columns: tuple[ColumnPlan, ...]
    models_schema: JSON  # one JSON Schema bundle: every params model, for dcg
    models_aliases: dict[str, str]  # property name Python would misread → model field name, for dcg
    terminal_tool: Source  # literal wire name or None
    has_terminal_tool: bool
    exports: Source  # the module's `__all__`, a list literal
    reward_rule: Source  # the snapshot's reward rule: the adapter's `reward=` default
    reward_summed: bool
    probed_tasks: Source | None  # the (split, index) tasks capture probed, when a tool is task-only
    secret_names: Source | None = None  # secrets the adapter forwards from the environment, if any
    deployment: Source | None = None  # the captured deployment, for the drift guard, if recorded
    conversation: bool = False  # the adapter reads the prompt as messages
    system_prompt: Source | None = None  # the system message build_dataset puts in `prompt`, if any
    toolset: Source | None = None  # the built-in toolset sessions open with, if captured with one
    score_group: bool = False  # the env scores groups (`/score_group`): the module offers `group_reward`


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
        MixtureMember(PythonIdentifier(s.name), names.class_name(s.name, suffix="Env"), literal(s.name))
        for s in sorted(snapshots, key=lambda s: s.name)
    )
    summary = (
        f"A mixture of ORS environments for one GRPOTrainer: {', '.join(m.module for m in members)}.\n\n"
        "It imports its members from its own directory, whether imported from a package\n"
        "(`from generated import " + names.slug(name) + "`) or not. Regenerate with `orlgen generate`."
    )
    return MixturePlan(name=names.slug(name), description=docstring_literal(summary, indent=""), members=members)


def plan(snapshot: Snapshot) -> ModulePlan:
    # Every order below is the canonical one, whatever the input's. `ordered` keeps the hash the
    # snapshot came with: re-hashing every task would cost more than the render itself.
    snapshot = snapshot.ordered().model_copy(update={"sha256": snapshot.sha256})
    env_class = names.class_name(snapshot.name, suffix="Env")
    env_var = f"ORLGEN_{PythonIdentifier(snapshot.name).upper()}_URL"  # names are checked identifiers
    task_schema = parse_schema(snapshot.task_schema, "task schema")
    bundle = Bundle(taken=RESERVED_CLASSES | {env_class})
    probed = tuple((ref.split, ref.index) for ref in snapshot.probed_tasks)
    named = tool_names(snapshot)
    tools = tuple(_plan_tool(parsed, *named[parsed[0].name], bundle, probed) for parsed in _parsed_tools(snapshot))
    definitions = bundle.definitions()
    return ModulePlan(
        snapshot_file=literal(snapshot.file_name),
        sha256=literal(snapshot.sha256),
        env_class=env_class,
        env_var=literal(env_var),
        env_var_name=env_var,
        target=TargetPlan(literal(snapshot.target.kind), literal(snapshot.target.value), literal(snapshot.target.env)),
        description=docstring_literal(_module_summary(snapshot), indent=""),
        tools=tools,
        num_tasks=literal({split.name: split.num_tasks for split in snapshot.splits}),
        columns=dataset_columns(task_schema),
        models_schema={"$defs": definitions},
        models_aliases=field_aliases(definitions),
        terminal_tool=literal(snapshot.terminal_tool.name if snapshot.terminal_tool else None),
        has_terminal_tool=snapshot.terminal_tool is not None,
        exports=_exports(env_class, tools, snapshot.terminal_tool is not None, snapshot.score_group),
        secret_names=literal(tuple(snapshot.secret_names)) if snapshot.secret_names else None,
        reward_rule=literal(snapshot.reward),
        reward_summed=snapshot.reward == "summed",
        probed_tasks=literal(probed) if any(not tool.shared for tool in tools) else None,
        deployment=literal(snapshot.deployment.model_dump(exclude_none=True)) if snapshot.deployment else None,
        conversation=snapshot.conversation,
        system_prompt=None if snapshot.system_prompt is None else literal(snapshot.system_prompt),
        toolset=None if snapshot.toolset is None else literal(snapshot.toolset),
        score_group=snapshot.score_group,
    )


# What every module exports beside its adapter class and params models.
_EXPORTS = (
    "SNAPSHOT_SHA256",
    "SPEC",
    "SPLITS",
    "TARGET",
    "TOOLS",
    "build_dataset",
    "environment_factory",
    "outcome_reward",
    "reward_funcs",
    "summed_reward",
)


def _exports(env_class: ClassName, tools: tuple[ToolPlan, ...], terminal: bool, group: bool = False) -> Source:
    """`__all__`, sorted as ruff's RUF022 sorts it (see `orlgen.plan.sorting`); `group_reward`
    (imported from the runtime because it is exported) for an env that scores groups."""
    exported = [env_class, *(tool.params_class for tool in tools if tool.params_class), *_EXPORTS]
    exported += ["submit_final_message"] if terminal else []
    exported += ["group_reward"] if group else []
    return literal(dunder_all_order(exported))


def dropped_keywords(snapshot: Snapshot) -> tuple[Dropped, ...]:
    """Every keyword the sanitiser drops from the snapshot's schemas, for the CLI to report."""
    parsed = [schema for _, schema in _parsed_tools(snapshot)] + [parse_schema(snapshot.task_schema, "task schema")]
    return tuple(found for schema in parsed for found in schema.dropped)


def lookalike_warnings(snapshot: Snapshot) -> tuple[str, ...]:
    """Every tool and parameter name renamed because it looks like another or hides characters
    (`names.lookalikes`), for the CLI to report: the rename is never silent."""
    found = [
        f"tool '{printable(wire)}' {why}: the model is shown it as {tool_names(snapshot)[wire][1]!r}"
        for wire, why in names.lookalikes(tool.name for tool in snapshot.tools).items()
    ]
    for tool, schema in _parsed_tools(snapshot):
        wires = [wire for wire, _ in schema.resolve(schema.root).properties]
        for wire, why in names.lookalikes(wires).items():
            found.append(
                f"tool '{printable(tool.name)}': parameter '{printable(wire)}' {why}: renamed to an ASCII name"
            )
    return tuple(found)


def _parsed_tools(snapshot: Snapshot) -> Iterator[tuple[Tool, Schema]]:
    for tool in sorted(snapshot.tools, key=lambda t: t.name):
        yield tool, tool.parsed_schema()


def _module_summary(snapshot: Snapshot) -> str:
    captured = ", ".join(
        f"{split.name} ({split.num_tasks} tasks, {snapshot.tasks[split.name].coverage} captured)"
        for split in snapshot.splits
        if split.name in snapshot.tasks
    )
    return (
        f"Typed TRL adapter for the ORS environment {snapshot.target.value!r}.\n\n"
        f"Splits: {captured or 'none'}.\n"
        + (f"Sessions open with the {snapshot.toolset!r} toolset.\n" if snapshot.toolset else "")
        + f"Regenerate with `orlgen generate`; re-capture with `{recorded.command(snapshot)}`."
    )


def tool_names(snapshot: Snapshot) -> dict[str, tuple[PythonIdentifier, str]]:
    """wire name → (method name, the name the model is shown) for every tool of the snapshot:
    `names.method_names` and `names.shown_names`, decided once for the planner and the verifier."""
    wires = sorted(tool.name for tool in snapshot.tools)
    # `Taken`: linear renaming, however many tools share a name
    methods = names.method_names(wires, taken=names.Taken(RESERVED_METHODS))
    return dict(zip(wires, zip(methods, names.shown_names(wires, methods), strict=True), strict=True))


def _plan_tool(
    parsed: tuple[Tool, Schema],
    method: PythonIdentifier,
    shown: str,
    bundle: Bundle,
    probed: tuple[tuple[str, int], ...],
) -> ToolPlan:
    tool, schema = parsed
    root = schema.resolve(schema.root)
    params_class = names.class_name(tool.name, suffix="Params", taken=bundle.taken) if root.properties else None
    docs = docstrings.parse(tool.description, params=[wire for wire, _ in root.properties])
    params: tuple[tuple[Param, str], ...] = ()
    if params_class is not None:
        bundle.add(params_class, schema)
        params = _params(root, schema, docs, taken={"self", params_class, *_HINT_NAMES, *_DEFAULT_NAMES})
    renamed = {param.wire: param.name for param, _ in params if literal(param.name) != param.wire}
    described = {wire for wire, _ in root.properties} | {param.name for param, _ in params}
    unmatched = {name: text for name, text in docs.params.items() if name not in described}
    offered = tuple((ref.split, ref.index) for ref in tool.offered_on)
    return ToolPlan(
        wire=literal(tool.name),
        method=method,
        renamed=shown != method,
        params_class=params_class,
        params=tuple(param for param, _ in params),
        aliases=Source(_aliases_literal(renamed)) if renamed else None,
        docstring=_tool_docstring(
            tool.name, docs, params, None if tool.shared else _offer_note(offered, probed), unmatched
        ),
        shared=tool.shared,
        fingerprint=literal(fingerprint(tool.description, tool.input_schema)),
        offered_on=None if tool.shared else literal(offered),
    )


def _offer_note(offered: tuple[tuple[str, int], ...], probed: tuple[tuple[str, int], ...]) -> str:
    """Which tasks offer a task-only tool, as far as capture probed (split names are server text:
    they reach the docstring through `safe` and the escaper, like the description)."""

    def tasks(refs: tuple[tuple[str, int], ...]) -> str:
        return ", ".join(f"{split}[{index}]" for split, index in refs) or "none"

    return f"Offered on some tasks only: {tasks(offered)} of the tasks probed ({tasks(probed)})."


def _aliases_literal(renamed: dict[Source, ParamName]) -> str:
    return "{" + ", ".join(f"{wire}: {literal(name)}" for wire, name in renamed.items()) + "}"


def _params(root: Node, schema: Schema, docs: docstrings.Docstring, taken: set[str]) -> tuple[tuple[Param, str], ...]:
    """Each property as a parameter and its one-line description, in the declared order."""
    wires = [wire for wire, _ in root.properties]
    out = []
    for (wire, node), name in zip(root.properties, names.param_names(wires, taken=taken), strict=True):
        required = wire in root.required
        hint = python_hint(node, schema)
        default = _default(node, schema, required)
        if default == "None" and hint != "Any" and "None" not in hint.split(" | "):
            hint = f"{hint} | None"  # pydantic's `x: T = None`: the hint admits the default
        param = Param(literal(wire), name, Source(hint), default)
        out.append((param, _param_doc(wire, name, node, schema, docs)))
    return tuple(out)


def _default(node: Node, schema: Schema, required: bool) -> Source | None:
    """The parameter's Python default: the schema's default when it is an immutable value the
    parameter admits, else `UNSET` for an optional parameter (nothing is sent for it, so the
    server applies its own default, which the description states)."""
    if required:
        return None
    resolved = schema.resolve(node)
    immutable = not isinstance(resolved.default, (dict, list))
    if resolved.has_default and immutable and _admits(schema.json_types(node), resolved.default):
        return literal(resolved.default)
    return Source("UNSET")


def _admits(types: frozenset[str], value: Any) -> bool:
    kind = json_type(value)
    return not types or kind in types or kind == "null" or (kind == "integer" and "number" in types)


def _param_doc(wire: str, name: str, node: Node, schema: Schema, docs: docstrings.Docstring) -> str:
    """One description per parameter: the schema's, else the docstring's, then what the hint
    cannot show (structure, constraints, default, examples)."""
    text = schema.resolve(node).description or docs.params.get(wire) or docs.params.get(name) or ""
    parts = [text.strip()] if text.strip() else []
    if schema.json_types(node) & {"object", "array"} and (shape := prose.structure(node, schema)):
        parts.append(f"Structure: {shape}.")
    if found := prose.constraints(node, schema):
        parts.append(f"Constraints: {', '.join(found)}.")
    parts += [p for p in (prose.default(node, schema), prose.examples(node, schema)) if p]
    if not parts:  # get_json_schema needs a description: the name in words is the least it can be
        parts.append(_humanise(wire))
    return docstrings.safe(docstrings.one_line(" ".join(_sentence(p) for p in parts)))


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def _humanise(name: str) -> str:
    words = names.snake_case(name).replace("_", " ") or name
    return words[:1].upper() + words[1:]


def _tool_docstring(
    wire: str,
    docs: docstrings.Docstring,
    params: tuple[tuple[Param, str], ...],
    offer: str | None,
    unmatched: dict[str, str],
) -> Source:
    """The method's docstring. An `Args:` entry that names no parameter of the schema (an
    argument the server reads some other way, or a stale one) stays in the description, where
    the model can still read it, since `Args:` may only list the method's parameters."""
    summary = docstrings.safe(docstrings.bounded_runs(docs.prose)) or _sentence(_humanise(wire))
    if offer:
        summary += f"\n\n{docstrings.safe(docstrings.one_line(offer))}"
    if unmatched:
        entries = (docstrings.safe(docstrings.one_line(f"{name}: {text}")) for name, text in unmatched.items())
        summary += "\n\nAlso documented, though not a parameter in the tool's schema:\n" + "\n".join(entries)
    if docs.raises:
        summary += f"\n\nFails with {docstrings.safe(docs.raises)}"
    lines = summary.split("\n")
    if params:
        lines += ["", "Args:"] + [f"    {param.name}: {doc}" for param, doc in params]
    if docs.returns:
        lines += ["", "Returns:", f"    {docstrings.safe(docs.returns)}"]
    return docstring_literal("\n".join(lines), indent="        ")
