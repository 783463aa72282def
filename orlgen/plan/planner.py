"""Snapshot → ModulePlan: every name, type and word of the generated modules, decided once for
every trainer.

This is the boundary where untrusted text from the server becomes code. Schemas become
`Schema`s (sanitised, see `orlgen.schema`); names become `PythonIdentifier`/`ParamName`/
`ClassName`; strings become `Source` (a Python literal, escaped here), or stay plain prose that a
trainer lays out (`orlgen.trainers`: TRL's docstrings for `get_json_schema`, made safe there).
The plan is trainer-neutral (sqlc's plugin model: one plain-data request, each trainer builds its
own template context from it); a trainer never re-derives a name, a type or a description. What a
trainer reads as a value rather than pastes (a hint's type, a shown name, the system message) the
plan holds as data beside its literal (`Param.annotation`, `ToolPlan.shown_name`,
`ModulePlan.system_text`), so no trainer parses Python text back (tests/test_plan_typed.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from orlgen import names
from orlgen.names import ClassName, ParamName, PythonIdentifier
from orlgen.plan import docstrings, prose
from orlgen.plan.aliases import field_aliases
from orlgen.plan.bundle import Bundle
from orlgen.plan.columns import ColumnPlan, dataset_columns
from orlgen.plan.emit import emit_json
from orlgen.plan.hints import Hint, python_annotation
from orlgen.plan.reserved import RESERVED_CLASSES, RESERVED_METHODS
from orlgen.plan.source import Source, docstring_literal, literal
from orlgen.runtime.data.reward import RewardRule
from orlgen.runtime.fingerprint import fingerprint
from orlgen.schema import JSON, Dropped, Node, Schema, json_type, parse_schema, printable
from orlgen.snapshot import recorded
from orlgen.snapshot.model import Snapshot, Tool, confusing_names

# Bumped whenever a field of the plan changes meaning or goes; a field added keeps it.
PLAN_VERSION = 3
# Names method signatures use in their hints: a parameter named like one would shadow it.
_HINT_NAMES = ("Any", "Literal", "JSONObject", "JSONArray", "ToolOutput")
# Module names a parameter default may use: a parameter of that name would shadow it.
_DEFAULT_NAMES = ("UNSET",)


@dataclass(frozen=True)
class Param:
    """One parameter of a tool method, the same in every trainer's module."""

    wire: Source  # the property name the server expects, as a literal
    name: ParamName
    hint: Source  # in the subset `get_json_schema` reads (`orlgen.plan.hints`): objects are `JSONObject`
    annotation: Hint  # the same hint as data (`str(annotation) == hint`): a trainer reads it, never the text
    default: Source | None  # a literal, `UNSET` ("not given": nothing is sent), or None if required
    doc: str  # one line: the author's words, then what a hint cannot show (structure, limits, default,
    # examples); prose a trainer lays out (not yet escaped or made docstring-safe)
    wire_name: str = ""  # the property name as text (`wire` is its literal)


@dataclass(frozen=True)
class ToolPlan:
    """One ORS tool, the same in every trainer's module. Prose fields are plain text for a trainer
    to lay out; `Source` fields are literals to paste."""

    wire: Source
    method: PythonIdentifier
    renamed: bool  # the model is shown the wire name, which differs from the method's: set as __name__
    params_class: ClassName | None
    params: tuple[Param, ...]
    aliases: Source | None  # {wire name: parameter name} for parameters Python had to rename
    shared: bool
    fingerprint: Source  # of the description and schema, for the runtime drift guard
    offered_on: Source | None  # a task-only tool: the probed (split, index) tasks that offer it
    shown: Source  # the name the model is shown (the wire name unless it misleads), a literal
    shown_name: str  # the same name as text
    summary: str  # the description's prose without its parameter, return and raise sections
    offer: str  # a task-only tool: which probed tasks offer it, in words ("" for a shared tool)
    unmatched: tuple[tuple[str, str], ...]  # documented arguments the schema lacks: (name, text)
    returns: str  # the description's `Returns:` text
    raises: str  # the description's `Raises:` text
    # The parameters as a JSON Schema for a trainer that shows one (OpenAI tool definitions): the
    # sanitised schema whole (`$defs` kept), each property described in the author's words.
    parameters: JSON = field(default_factory=dict)

    def description(self) -> str:
        """What the model reads of the tool beside a parameter schema: the author's prose, the
        tasks that offer a task-only tool, arguments documented but not in the schema, what it
        returns and raises (each parameter's own words are in the schema, with the parameter)."""
        parts = [self.summary]
        if self.offer:
            parts.append(self.offer)
        if self.unmatched:
            parts.append(
                "Also documented, though not a parameter in the tool's schema:\n"
                + "\n".join(f"{name}: {text}" for name, text in self.unmatched)
            )
        if self.returns:
            parts.append(f"Returns: {self.returns}")
        if self.raises:
            parts.append(f"Fails with {self.raises}")
        return "\n\n".join(parts)


@dataclass(frozen=True)
class TargetPlan:
    kind: Source
    value: Source
    env: Source


@dataclass(frozen=True)
class ModulePlan:
    """Everything any trainer's module needs of one snapshot, decided once (version
    `PLAN_VERSION`). A trainer's context (`orlgen.trainers.Trainer.context`) reads it, adds its
    own layout, and never re-derives a name, type or description.

    Identity: `name` (the env's, as text), `snapshot_file`, `sha256` (literals), `env_class` (the
    adapter class's name), `env_var`/`env_var_name` (the URL override variable, as a literal and
    as text), `target` (kind, value, env key, literals) and `target_value` (its value as text).
    Words: `facts` (the splits captured and how to regenerate and re-capture, prose).
    Tools: `tools` (names, hints, defaults, the author's words and what hints cannot show), `terminal_tool`
    (literal wire name or None) and `has_terminal_tool`; `probed_tasks` when a tool is task-only.
    Models: `models_schema` (one JSON Schema bundle of every params model, for
    datamodel-code-generator) and `models_aliases`.
    Tasks: `num_tasks` ({split: count}), `columns`, `conversation`, `system_prompt` (and as text, `system_text`).
    Scoring: `reward_rule` (the `RewardRule(...)` expression, None at the default) and
    `reward_text` (the rule as a reviewer reads it). Trust: `secret_names`, `deployment`.
    """

    name: PythonIdentifier  # the env's name: its modules' and files' stem
    snapshot_file: Source
    sha256: Source
    env_class: ClassName
    env_var: Source
    env_var_name: str  # upper-case identifier characters only
    target: TargetPlan
    tools: tuple[ToolPlan, ...]
    num_tasks: Source  # {split: count}
    columns: tuple[ColumnPlan, ...]
    models_schema: JSON  # one JSON Schema bundle: every params model, for dcg
    models_aliases: dict[str, str]  # property name Python would misread → model field name, for dcg
    terminal_tool: Source  # literal wire name or None
    has_terminal_tool: bool
    reward_rule: Source | None  # `RewardRule(...)`, the snapshot's rule; None at the default (last)
    reward_text: str  # the rule as a reviewer reads it: `mean, unfinished -1.0, clamp 0.0:1.0`
    probed_tasks: Source | None  # the (split, index) tasks capture probed, when a tool is task-only
    target_value: str  # the target's value as text, for prose
    facts: str  # the splits captured, and how to regenerate and re-capture: prose
    secret_names: Source | None = None  # secrets the adapter forwards from the environment, if any
    deployment: Source | None = None  # the captured deployment, for the drift guard, if recorded
    conversation: bool = False  # the adapter reads the prompt as messages
    system_prompt: Source | None = None  # the system message build_dataset puts in `prompt`, if any
    system_text: str | None = None  # the same message as text
    version: int = PLAN_VERSION
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
    weights: Source | None = None  # the config's sampling weights by member name, a dict literal


def plan_mixture(name: str, snapshots: list[Snapshot], weights: dict[str, float] | None = None) -> MixturePlan:
    """A module that hands several environments to one trainer: `environment_factory` as a dict;
    `weights` (the mixture config's) recorded as its `build_dataset`'s default shares."""
    members = tuple(
        MixtureMember(PythonIdentifier(s.name), names.class_name(s.name, suffix="Env"), literal(s.name))
        for s in sorted(snapshots, key=lambda s: s.name)
    )
    summary = (
        f"A mixture of ORS environments for one GRPOTrainer: {', '.join(m.module for m in members)}.\n\n"
        "It imports its members from its own directory, whether imported from a package\n"
        "(`from generated import " + names.slug(name) + "`) or not. Regenerate with `orlgen generate`."
    )
    recorded = {env: float(weight) for env, weight in sorted((weights or {}).items())}
    if recorded:
        shares = ", ".join(f"{env} {weight:g}" for env, weight in recorded.items())
        summary += (
            f"\n\nSampling weights (the mixture config's): {shares}. `build_dataset(num_tasks=N)` draws\n"
            "tasks in these shares: the share of rows, so of GRPO groups, per environment."
        )
    return MixturePlan(
        name=names.slug(name),
        description=docstring_literal(summary, indent=""),
        members=members,
        weights=literal(recorded) if recorded else None,
    )


def plan(snapshot: Snapshot) -> ModulePlan:
    # Every order below is the canonical one, whatever the input's. `ordered` keeps the hash the
    # snapshot came with: re-hashing every task would cost more than the render itself.
    snapshot = snapshot.ordered().model_copy(update={"sha256": snapshot.sha256})
    env_class = names.class_name(snapshot.name, suffix="Env")
    name = PythonIdentifier(snapshot.name)  # names are checked identifiers
    env_var = f"ORLGEN_{name.upper()}_URL"
    task_schema = parse_schema(snapshot.task_schema, "task schema")
    bundle = Bundle(taken=RESERVED_CLASSES | {env_class})
    probed = tuple((ref.split, ref.index) for ref in snapshot.probed_tasks)
    named = tool_names(snapshot)
    tools = tuple(_plan_tool(parsed, *named[parsed[0].name], bundle, probed) for parsed in _parsed_tools(snapshot))
    definitions = bundle.definitions()
    return ModulePlan(
        name=name,
        snapshot_file=literal(snapshot.file_name),
        sha256=literal(snapshot.sha256),
        env_class=env_class,
        env_var=literal(env_var),
        env_var_name=env_var,
        target=TargetPlan(literal(snapshot.target.kind), literal(snapshot.target.value), literal(snapshot.target.env)),
        tools=tools,
        num_tasks=literal({split.name: split.num_tasks for split in snapshot.splits}),
        columns=dataset_columns(task_schema),
        models_schema={"$defs": definitions},
        models_aliases=field_aliases(definitions),
        terminal_tool=literal(snapshot.terminal_tool.name if snapshot.terminal_tool else None),
        has_terminal_tool=snapshot.terminal_tool is not None,
        secret_names=literal(tuple(snapshot.secret_names)) if snapshot.secret_names else None,
        reward_rule=None if snapshot.reward.is_default else _reward_rule(snapshot.reward.rule),
        reward_text=str(snapshot.reward.rule),
        probed_tasks=literal(probed) if any(not tool.shared for tool in tools) else None,
        deployment=literal(snapshot.deployment.model_dump(exclude_none=True)) if snapshot.deployment else None,
        conversation=snapshot.conversation,
        system_prompt=None if snapshot.system_prompt is None else literal(snapshot.system_prompt),
        system_text=snapshot.system_prompt,
        target_value=snapshot.target.value,
        facts=_facts(snapshot),
        toolset=None if snapshot.toolset is None else literal(snapshot.toolset),
        score_group=snapshot.score_group,
    )


def dropped_keywords(snapshot: Snapshot) -> tuple[Dropped, ...]:
    """Every keyword the sanitiser drops from the snapshot's schemas, for the CLI to report."""
    parsed = [schema for _, schema in _parsed_tools(snapshot)] + [parse_schema(snapshot.task_schema, "task schema")]
    return tuple(found for schema in parsed for found in schema.dropped)


def lookalike_warnings(snapshot: Snapshot) -> tuple[str, ...]:
    """Every tool and parameter name renamed because it looks like another or hides characters
    (`confusing_names`), for the CLI to report: the rename is never silent."""
    shown = tool_names(snapshot)
    return tuple(
        (
            f"tool '{printable(tool)}' {why}: the model is shown it as {shown[tool][1]!r}"
            if parameter is None
            else f"tool '{printable(tool)}': parameter '{printable(parameter)}' {why}: renamed to an ASCII name"
        )
        for tool, parameter, why in confusing_names(snapshot.tools)
    )


def _parsed_tools(snapshot: Snapshot) -> Iterator[tuple[Tool, Schema]]:
    for tool in sorted(snapshot.tools, key=lambda t: t.name):
        yield tool, tool.parsed_schema()


def _facts(snapshot: Snapshot) -> str:
    """What every module's docstring says after naming its trainer and target."""
    captured = ", ".join(
        f"{split.name} ({split.num_tasks} tasks, {snapshot.tasks[split.name].coverage} captured)"
        for split in snapshot.splits
        if split.name in snapshot.tasks
    )
    return (
        f"Splits: {captured or 'none'}.\n"
        + f"Reward: {snapshot.reward.rule.describe()} (the env's rule, as every trainer and eval apply it).\n"
        + (f"Sessions open with the {snapshot.toolset!r} toolset.\n" if snapshot.toolset else "")
        + f"Regenerate with `orlgen generate`; re-capture with `{recorded.command(snapshot)}`."
    )


def _reward_rule(rule: RewardRule) -> Source:
    """`RewardRule(...)` for SPEC, naming only what differs from the default."""
    words = [repr(rule.reduce)]
    words += [f"unfinished={rule.unfinished!r}"] if rule.unfinished is not None else []
    words += [f"clamp={rule.clamp!r}"] if rule.clamp is not None else []
    return Source(f"RewardRule({', '.join(words)})")


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
    params: tuple[Param, ...] = ()
    if params_class is not None:
        bundle.add(params_class, schema)
        params = _params(root, schema, docs, taken={"self", params_class, *_HINT_NAMES, *_DEFAULT_NAMES})
    renamed = {param.wire: param.name for param in params if literal(param.name) != param.wire}
    described = {wire for wire, _ in root.properties} | {param.name for param in params}
    offered = tuple((ref.split, ref.index) for ref in tool.offered_on)
    return ToolPlan(
        wire=literal(tool.name),
        method=method,
        renamed=shown != method,
        params_class=params_class,
        params=params,
        aliases=Source(_aliases_literal(renamed)) if renamed else None,
        shared=tool.shared,
        fingerprint=literal(fingerprint(tool.description, tool.input_schema)),
        offered_on=None if tool.shared else literal(offered),
        shown=literal(shown),
        shown_name=shown,
        summary=docstrings.bounded_runs(docs.prose) or _sentence(_humanise(tool.name)),
        offer="" if tool.shared else docstrings.one_line(_offer_note(offered, probed)),
        unmatched=tuple((name, text) for name, text in docs.params.items() if name not in described),
        returns=docs.returns,
        raises=docs.raises,
        parameters=_parameters(root, schema, docs),
    )


def _parameters(root: Node, schema: Schema, docs: docstrings.Docstring) -> JSON:
    """The tool's parameters as one JSON Schema: the sanitised schema (as the models are written
    from it: `emit_json`), its definitions under `$defs`, and each property without a
    description of its own given the author's words for it from the tool's `Args:`."""

    def ref(name: str) -> str:
        return "#" if name == "" else "#/$defs/" + name.replace("~", "~0").replace("/", "~1")

    out: JSON = {"type": "object", "properties": {}, **emit_json(schema, root, ref)}
    for wire, node in root.properties:
        words = _words(wire, wire, node, schema, docs)
        if words and "description" not in out["properties"][wire]:
            out["properties"][wire]["description"] = words
    if schema.defs:
        out["$defs"] = {name: emit_json(schema, node, ref) for name, node in schema.defs.items()}
    return out


def _offer_note(offered: tuple[tuple[str, int], ...], probed: tuple[tuple[str, int], ...]) -> str:
    """Which tasks offer a task-only tool, as far as capture probed (split names are server text:
    they reach the docstring through `safe` and the escaper, like the description)."""

    def tasks(refs: tuple[tuple[str, int], ...]) -> str:
        return ", ".join(f"{split}[{index}]" for split, index in refs) or "none"

    return f"Offered on some tasks only: {tasks(offered)} of the tasks probed ({tasks(probed)})."


def _aliases_literal(renamed: dict[Source, ParamName]) -> str:
    return "{" + ", ".join(f"{wire}: {literal(name)}" for wire, name in renamed.items()) + "}"


def _params(root: Node, schema: Schema, docs: docstrings.Docstring, taken: set[str]) -> tuple[Param, ...]:
    """Each property as a parameter, in the declared order."""
    wires = [wire for wire, _ in root.properties]
    out = []
    for (wire, node), name in zip(root.properties, names.param_names(wires, taken=taken), strict=True):
        required = wire in root.required
        annotation = python_annotation(node, schema)
        default = _default(node, schema, required)
        if default == "None":
            annotation = annotation.or_none()  # pydantic's `x: T = None`: the hint admits the default
        words = _words(wire, name, node, schema, docs)
        out.append(
            Param(
                wire=literal(wire),
                name=name,
                hint=Source(str(annotation)),
                annotation=annotation,
                default=default,
                doc=_param_doc(wire, words, node, schema),
                wire_name=wire,
            )
        )
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


def _words(wire: str, name: str, node: Node, schema: Schema, docs: docstrings.Docstring) -> str:
    """The author's words for a parameter: the schema's description, else the docstring's entry."""
    text = schema.resolve(node).description or docs.params.get(wire) or docs.params.get(name) or ""
    return text.strip()


def _param_doc(wire: str, words: str, node: Node, schema: Schema) -> str:
    """One description per parameter: the author's words, then what the hint cannot show
    (structure, constraints, default, examples)."""
    parts = [words] if words else []
    if schema.json_types(node) & {"object", "array"} and (shape := prose.structure(node, schema)):
        parts.append(f"Structure: {shape}.")
    if found := prose.constraints(node, schema):
        parts.append(f"Constraints: {', '.join(found)}.")
    parts += [p for p in (prose.default(node, schema), prose.examples(node, schema)) if p]
    if not parts:  # get_json_schema needs a description: the name in words is the least it can be
        parts.append(_humanise(wire))
    return docstrings.one_line(" ".join(_sentence(p) for p in parts))


def _sentence(text: str) -> str:
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def _humanise(name: str) -> str:
    words = names.snake_case(name).replace("_", " ") or name
    return words[:1].upper() + words[1:]
