"""Classify every difference between two snapshots, with a named rule per change.

Rules come in four categories, after buf's `breaking` checks:
- TRUST: where the adapter connects and which secrets it sends there (breaking: a reviewer
  must see it, whatever else changed);
- CALL: code or prompts that call tools break (breaking);
- PROMPT: what the model is trained on changes, calls still work;
- DATA: splits, task counts, the stored tasks' values, task fields, task-only tool sets.
A change is breaking when it is a TRUST or CALL change, a removed split or a removed task field.
A project moves rules with `[tool.orlgen.diff]` (`Rules`): `breaking` promotes a rule (e.g.
`TOOL_ADDED` for a frozen eval suite), `ignore` leaves one unreported (e.g. `TASK_COUNT_CHANGED`
for a growing env); a TRUST rule cannot be ignored.

The rules are versioned, as buf pins its rule sets: a project pins one with `rules = "1"` (default:
the latest), so a release that adds a breaking rule or makes one breaking does not turn its CI red
until it moves the pin. Each set lists only what it changes from the set before it
(`RULE_SET_CHANGES`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from orlgen import lookalike
from orlgen.schema import Node, Schema, parse_schema, printable
from orlgen.snapshot.model import Snapshot, Tool

Category = Literal["TRUST", "CALL", "PROMPT", "DATA"]

# rule → (category, breaking): rule set "1"
RULES: dict[str, tuple[Category, bool]] = {
    "TARGET_CHANGED": ("TRUST", True),
    "SECRETS_CHANGED": ("TRUST", True),
    "TOOL_REMOVED": ("CALL", True),
    "PARAM_REMOVED": ("CALL", True),
    "PARAM_BECAME_REQUIRED": ("CALL", True),
    "REQUIRED_PARAM_ADDED": ("CALL", True),
    "TYPE_CHANGED": ("CALL", True),
    "TOOLSET_CHANGED": ("CALL", True),
    "ENUM_VALUE_REMOVED": ("CALL", True),
    "CONSTRAINT_TIGHTENED": ("CALL", True),
    "TOOL_ADDED": ("PROMPT", False),
    "TOOL_DESCRIPTION_CHANGED": ("PROMPT", False),
    "PARAM_DESCRIPTION_CHANGED": ("PROMPT", False),
    "PARAM_ORDER_CHANGED": ("PROMPT", False),
    "OPTIONAL_PARAM_ADDED": ("PROMPT", False),
    "PARAM_BECAME_OPTIONAL": ("PROMPT", False),
    "TYPE_WIDENED": ("PROMPT", False),
    "ENUM_VALUE_ADDED": ("PROMPT", False),
    "DEFAULT_CHANGED": ("PROMPT", False),
    "CONSTRAINT_LOOSENED": ("PROMPT", False),
    "TERMINAL_TOOL_CHANGED": ("PROMPT", False),
    "REWARD_RULE_CHANGED": ("PROMPT", False),
    "PROMPT_SHAPE_CHANGED": ("PROMPT", False),
    "SPLIT_ADDED": ("DATA", False),
    "SPLIT_REMOVED": ("DATA", True),
    "TASK_COUNT_CHANGED": ("DATA", False),
    "TASK_FIELD_ADDED": ("DATA", False),
    "TASK_FIELD_REMOVED": ("DATA", True),
    "TASK_FIELD_RETYPED": ("DATA", False),
    "TASK_TOOLS_CHANGED": ("DATA", False),
    "TASKS_CHANGED": ("DATA", False),
}

# Every rule set, oldest first, as what it changes from the set before it: a new rule, or a rule
# whose category or breaking flag flips. A release adds set "2" as one entry listing only those.
RULE_SET_CHANGES: dict[str, dict[str, tuple[Category, bool]]] = {"1": RULES}


def rule_set_names() -> list[str]:
    """The known rule sets, oldest first; the last is the latest (the default)."""
    return list(RULE_SET_CHANGES)


def classify(rule: str, rule_set: str | None = None) -> tuple[Category, bool]:
    """`rule`'s category and breaking flag in `rule_set` (default: the latest): the last entry for
    it among the sets up to that one. A rule that set does not know yet, introduced by a later
    one, is reported with the category its set gives it but not breaking: the pin keeps CI's
    verdict as it was, and a reviewer still sees every change the code finds. A TRUST rule is
    the exception, breaking under every set: where the adapter connects and which secrets it
    sends are always reviewed, as no project can ignore them."""
    names = rule_set_names()
    pinned = names[: names.index(rule_set or names[-1]) + 1]
    entries = [RULE_SET_CHANGES[name][rule] for name in pinned if rule in RULE_SET_CHANGES[name]]
    if entries:
        return entries[-1]
    category = next(changes[rule][0] for changes in RULE_SET_CHANGES.values() if rule in changes)
    return category, category == "TRUST"


def known_rule_set(name: object) -> str:
    """`name`, when it names a rule set; else a RuleError naming the known sets."""
    if isinstance(name, str) and name in RULE_SET_CHANGES:
        return name
    known = ", ".join(f'"{each}"' for each in rule_set_names())
    raise RuleError(f"unknown rule set {name!r}: the known sets are {known}")


def known_rules() -> set[str]:
    """Every rule name of every set: those a project may name in `breaking` or `ignore`."""
    return {rule for changes in RULE_SET_CHANGES.values() for rule in changes}


_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_MAX_DEPTH = 6


Style = Literal["text", "json", "github", "markdown"]


@dataclass(frozen=True)
class Change:
    rule: str
    subject: str  # `tool`, `tool.param`, `tool.param.field`, `split`, `task.field`
    detail: str
    promoted: bool = False  # breaking because the project's rules say so
    rule_set: str | None = None  # the set that classes it (None: the latest)

    @property
    def category(self) -> Category:
        return classify(self.rule, self.rule_set)[0]

    @property
    def breaking(self) -> bool:
        return self.promoted or classify(self.rule, self.rule_set)[1]

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "subject": self.subject,
            "detail": self.detail,
            "category": self.category,
            "breaking": self.breaking,
        }


class RuleError(ValueError):
    """A rule list names an unknown rule, or ignores one that must be seen, or the rule set is unknown."""


@dataclass(frozen=True)
class Rules:
    """The project's `[tool.orlgen.diff]`: rules promoted to breaking, rules not reported, and
    the rule set that classes the rest (None: the latest)."""

    breaking: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    rule_set: str | None = None

    @classmethod
    def of(cls, breaking: Iterable[str] = (), ignore: Iterable[str] = (), rule_set: str | None = None) -> Rules:
        """Validated lists: a known set, every name a rule, no TRUST rule ignored, no rule in both."""
        rules = cls(frozenset(breaking), frozenset(ignore), None if rule_set is None else known_rule_set(rule_set))
        every = known_rules()
        unknown = sorted((rules.breaking | rules.ignore) - every)
        if unknown:
            close = difflib.get_close_matches(unknown[0], every, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise RuleError(f"unknown rule {unknown[0]!r}{hint}; the rules are: {', '.join(sorted(every))}")
        trusted = sorted(rule for rule in rules.ignore if classify(rule, rule_set)[0] == "TRUST")
        if trusted:
            raise RuleError(f"{trusted[0]} cannot be ignored: where the adapter connects is always reviewed")
        both = sorted(rules.breaking & rules.ignore)
        if both:
            raise RuleError(f"{both[0]} is both promoted to breaking and ignored: keep it in one list")
        return rules

    def applied(self, changes: Iterable[Change]) -> list[Change]:
        """The changes this project reports, each breaking as its rules say."""
        return [
            replace(change, promoted=change.rule in self.breaking, rule_set=self.rule_set)
            for change in changes
            if change.rule not in self.ignore
        ]


def diff(old: Snapshot, new: Snapshot, live: bool = False, rules: Rules = Rules()) -> list[Change]:
    """Every change from `old` to `new` the project's `rules` report, sorted by category, subject
    and rule. A `live` capture's target is the one just given on the command line, not a change
    to report."""
    changes = rules.applied({*_trust(old, new, live), *_tools(old, new), *_data(old, new)})
    order = {"TRUST": 0, "CALL": 1, "PROMPT": 2, "DATA": 3}
    return sorted(changes, key=lambda c: (order[c.category], c.subject, c.rule, c.detail))


def _trust(old: Snapshot, new: Snapshot, live: bool) -> Iterator[Change]:
    """Where the adapter connects by default, and which secrets' values it sends there: a pull
    request that reseals either can take the trainer's secrets to a host of its own."""
    if not live and (old.target.kind, old.target.value) != (new.target.kind, new.target.value):
        yield Change(
            "TARGET_CHANGED",
            "target",
            f"{old.target.kind} {old.target.value!a} → {new.target.kind} {new.target.value!a}",
        )
    if sorted(old.secret_names) != sorted(new.secret_names):
        yield Change("SECRETS_CHANGED", "secret_names", f"{sorted(old.secret_names)} → {sorted(new.secret_names)}")


def _tools(old: Snapshot, new: Snapshot) -> Iterator[Change]:
    before = {tool.name: tool for tool in old.tools}
    after = {tool.name: tool for tool in new.tools}
    for name in sorted(before.keys() - after.keys()):
        yield Change("TOOL_REMOVED", name, "the tool is gone")
    for name in sorted(after.keys() - before.keys()):
        yield Change("TOOL_ADDED", name, "new tool" if after[name].shared else "new task-only tool")
    for name in sorted(before.keys() & after.keys()):
        yield from _tool(before[name], after[name])
    if old.terminal_tool != new.terminal_tool:
        yield Change(
            "TERMINAL_TOOL_CHANGED", "terminal_tool", f"{_name(old.terminal_tool)} → {_name(new.terminal_tool)}"
        )
    if old.toolset != new.toolset:  # the sessions open with other built-in tools, which act otherwise
        yield Change("TOOLSET_CHANGED", "toolset", f"{old.toolset or 'none'} → {new.toolset or 'none'}")
    if old.reward.rule != new.reward.rule:  # the score the trainer optimises is computed another way
        yield Change("REWARD_RULE_CHANGED", "reward", f"{old.reward.rule} → {new.reward.rule}")
    if (old.conversation, old.system_prompt) != (new.conversation, new.system_prompt):
        yield Change("PROMPT_SHAPE_CHANGED", "prompt", f"{_prompt_shape(old)} → {_prompt_shape(new)}")


def _prompt_shape(snapshot: Snapshot) -> str:
    if not snapshot.conversation:
        return "text"
    return "messages" + ("" if snapshot.system_prompt is None else " with a shared system prompt")


def _name(tool: Any) -> str:
    return "none" if tool is None else repr(tool.name)


def _tool(old: Tool, new: Tool) -> Iterator[Change]:
    if old.description != new.description:
        yield Change("TOOL_DESCRIPTION_CHANGED", old.name, "description changed")
    if (old.shared, old.offered_on) != (new.shared, new.offered_on):
        yield Change("TASK_TOOLS_CHANGED", old.name, _offer(old) + " → " + _offer(new))
    before, after = old.parsed_schema(), new.parsed_schema()
    yield from _object(old.name, Side(before, before.root), Side(after, after.root), 0)


def _offer(tool: Tool) -> str:
    if tool.shared:
        return "shared"
    return "task-only on " + (", ".join(f"{r.split}[{r.index}]" for r in tool.offered_on) or "no probed task")


@dataclass(frozen=True)
class Side:
    """A node and the schema its references resolve in."""

    schema: Schema
    node: Node

    def resolved(self) -> Side:
        return Side(self.schema, self.schema.resolve(self.node))

    def at(self, node: Node) -> Side:
        return Side(self.schema, node)

    @property
    def types(self) -> frozenset[str]:
        return self.schema.json_types(self.node)


def _object(path: str, old: Side, new: Side, depth: int) -> Iterator[Change]:
    """Compare the properties of two object schemas (a tool's parameters, or a nested object)."""
    old, new = old.resolved(), new.resolved()
    before, after = dict(old.node.properties), dict(new.node.properties)
    old_required, new_required = set(old.node.required), set(new.node.required)
    for name in sorted(before.keys() - after.keys()):
        yield Change("PARAM_REMOVED", f"{path}.{name}", "no longer accepted")
    for name in sorted(after.keys() - before.keys()):
        rule = "REQUIRED_PARAM_ADDED" if name in new_required else "OPTIONAL_PARAM_ADDED"
        yield Change(rule, f"{path}.{name}", "new parameter")
    kept_before = [name for name in before if name in after]
    kept_after = [name for name in after if name in before]
    if kept_before != kept_after:
        yield Change("PARAM_ORDER_CHANGED", path, f"({', '.join(kept_before)}) → ({', '.join(kept_after)})")
    for name in sorted(before.keys() & after.keys()):
        where = f"{path}.{name}"
        if name in new_required and name not in old_required:
            yield Change("PARAM_BECAME_REQUIRED", where, "was optional")
        if name in old_required and name not in new_required:
            yield Change("PARAM_BECAME_OPTIONAL", where, "was required")
        yield from _value(where, old.at(before[name]), new.at(after[name]), depth + 1)


def _value(path: str, old: Side, new: Side, depth: int) -> Iterator[Change]:
    old, new = old.resolved(), new.resolved()
    if old.node.description != new.node.description:
        yield Change("PARAM_DESCRIPTION_CHANGED", path, "description changed")
    if old.node.default_json != new.node.default_json:
        yield Change("DEFAULT_CHANGED", path, f"{_default(old.node)} → {_default(new.node)}")
    old_types, new_types = old.types, new.types
    if old_types != new_types:
        yield _retyped(path, old_types, new_types)
    old_enum, new_enum = _enum(old), _enum(new)
    if old_enum is not None and new_enum is not None:
        for value in [v for v in old_enum if v not in new_enum]:
            yield Change("ENUM_VALUE_REMOVED", path, _json(value))
        for value in [v for v in new_enum if v not in old_enum]:
            yield Change("ENUM_VALUE_ADDED", path, _json(value))
    elif new_enum is not None:
        yield Change("CONSTRAINT_TIGHTENED", path, f"now one of {_json(new_enum)}")
    yield from _bounds(path, old.node, new.node)
    if depth < _MAX_DEPTH:
        if "object" in old_types & new_types:
            yield from _object(path, _branch(old, "object"), _branch(new, "object"), depth)
        if "array" in old_types & new_types:
            old_items, new_items = _branch(old, "array").node.items, _branch(new, "array").node.items
            if old_items is not None and new_items is not None:
                yield from _value(f"{path}[]", old.at(old_items), new.at(new_items), depth + 1)


def _retyped(path: str, old: frozenset[str], new: frozenset[str]) -> Change:
    """A widening when every value the old types admit the new ones admit too (an integer is a
    JSON Schema number): calls that passed still pass, and what changes is the type the model
    reads in the tool's schema. Anything else may refuse a call that passed."""
    lost = old - new - ({"integer"} if "number" in new else set())
    change = f"{_types(old)} → {_types(new)}"
    if new and (not old or lost):
        return Change("TYPE_CHANGED", path, change)
    return Change(
        "TYPE_WIDENED", path, f"{change}: every value valid before still is; the model now reads {_types(new)}"
    )


def _default(node: Node) -> str:
    return node.default_json if node.default_json is not None else "none"


def _branch(side: Side, kind: str) -> Side:
    """The part of a (possibly nullable or union) schema that describes `kind` values."""
    for branch in side.schema.branches(side.node):
        if kind in side.schema.json_types(branch):
            return side.at(branch)
    return side


def _enum(side: Side) -> list[Any] | None:
    values: list[Any] = []
    for branch in side.schema.branches(side.node):
        if branch.enum is None:
            if side.schema.json_types(branch) != {"null"}:
                return None
            continue
        values += [value for value in branch.enum if value not in values]
    return values or None


def _bounds(path: str, old: Node, new: Node) -> Iterator[Change]:
    before_all = {**dict(old.constraints), "format": old.format}
    after_all = {**dict(new.constraints), "format": new.format}
    for key in _LOWER_BOUNDS + _UPPER_BOUNDS + ("pattern", "format", "multipleOf"):
        before, after = before_all.get(key), after_all.get(key)
        if before == after:
            continue
        if key in _LOWER_BOUNDS and isinstance(before, (int, float)) and isinstance(after, (int, float)):
            tightened = after > before
        elif key in _UPPER_BOUNDS and isinstance(before, (int, float)) and isinstance(after, (int, float)):
            tightened = after < before
        else:
            tightened = after is not None  # a new or changed pattern/format/bound may refuse old values
        rule = "CONSTRAINT_TIGHTENED" if tightened else "CONSTRAINT_LOOSENED"
        yield Change(rule, path, f"{key}: {_json(before)} → {_json(after)}")


def _data(old: Snapshot, new: Snapshot) -> Iterator[Change]:
    before = {split.name: split.num_tasks for split in old.splits}
    after = {split.name: split.num_tasks for split in new.splits}
    for name in sorted(before.keys() - after.keys()):
        yield Change("SPLIT_REMOVED", name, f"had {before[name]} tasks")
    for name in sorted(after.keys() - before.keys()):
        yield Change("SPLIT_ADDED", name, f"{after[name]} tasks")
    for name in sorted(before.keys() & after.keys()):
        if before[name] != after[name]:
            yield Change("TASK_COUNT_CHANGED", name, f"{before[name]} → {after[name]} tasks")
    yield from _stored_tasks(old, new)
    old_schema, new_schema = parse_schema(old.task_schema, "task schema"), parse_schema(new.task_schema, "task schema")
    old_fields = dict(old_schema.resolve(old_schema.root).properties)
    new_fields = dict(new_schema.resolve(new_schema.root).properties)
    for name in sorted(old_fields.keys() - new_fields.keys()):
        yield Change("TASK_FIELD_REMOVED", f"task.{name}", "no longer in task specs")
    for name in sorted(new_fields.keys() - old_fields.keys()):
        yield Change("TASK_FIELD_ADDED", f"task.{name}", "new task-spec field")
    for name in sorted(old_fields.keys() & new_fields.keys()):
        old_types = old_schema.json_types(old_fields[name])
        new_types = new_schema.json_types(new_fields[name])
        if old_types != new_types:
            yield Change("TASK_FIELD_RETYPED", f"task.{name}", f"{_types(old_types)} → {_types(new_types)}")


def _stored_tasks(old: Snapshot, new: Snapshot) -> Iterator[Change]:
    """Tasks both snapshots store, at the same index, whose values differ: a split's stored rows
    are compared by one hash, and only a split whose hashes differ is compared row by row. A
    snapshot loaded without its rows tells nothing here (counts are compared apart)."""
    if not (old.rows_read and new.rows_read):
        return
    for name in sorted(old.tasks.keys() & new.tasks.keys()):
        before = {task.index: task.spec for task in old.tasks[name].tasks}
        after = {task.index: task.spec for task in new.tasks[name].tasks}
        both = sorted(before.keys() & after.keys())
        if _rows_hash(before, both) == _rows_hash(after, both):
            continue
        changed = [index for index in both if _json(before[index]) != _json(after[index])]
        yield Change(
            "TASKS_CHANGED", name, f"{len(changed)} of {len(both)} stored tasks changed (first: {name}[{changed[0]}])"
        )


def _rows_hash(rows: dict[int, Any], indices: list[int]) -> str:
    return hashlib.sha256("\n".join(_json(rows[index]) for index in indices).encode()).hexdigest()


def _types(types: frozenset[str]) -> str:
    return " | ".join(sorted(types)) or "any"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def render(changes: list[Change], style: Style) -> str:
    """The report: one line per change (rule first), a JSON document, GitHub annotations, or a
    Markdown table for a pull request's body."""
    if style == "json":
        breaking = any(change.breaking for change in changes)
        return json.dumps({"breaking": breaking, "changes": [c.as_dict() for c in changes]}, indent=2) + "\n"
    if style == "markdown":
        return _markdown(changes)
    lines = []
    for change in changes:
        if style == "github":
            level = "error" if change.breaking else "notice"
            lines.append(f"::{level} title=orlgen {change.rule}::{_github(f'{change.subject}: {change.detail}')}")
        else:  # subjects and details hold server names: one line each, whatever they contain
            mark = "BREAKING " if change.breaking else ""
            lines.append(
                f"{change.rule:<26} {change.category:<6} {mark}{printable(change.subject)}: {printable(change.detail)}"
            )
    return "".join(line + "\n" for line in lines)


def _markdown(changes: list[Change]) -> str:
    """A table, breaking changes first (each group keeps diff's order), or one line when there are none."""
    if not changes:
        return "No changes to the environment's surface.\n"
    rows = sorted(changes, key=lambda change: not change.breaking)  # stable: diff's order within each group
    breaking = sum(change.breaking for change in changes)
    lines = [
        f"**{len(changes)} change(s), {breaking} breaking**",
        "",
        "| | Rule | Class | Subject | Detail |",
        "|---|---|---|---|---|",
        *(
            f"| {'⚠️ breaking' if c.breaking else ''} | `{c.rule}` | {c.category} "
            f"| {_cell(c.subject)} | {_cell(c.detail)} |"
            for c in rows
        ),
    ]
    return "".join(line + "\n" for line in lines)


def _cell(text: str) -> str:
    """Server text as one inert table cell: printable, invisible characters escaped, and every
    character Markdown or HTML would act on backslash-escaped or written as an entity, so a
    name cannot end the cell, open a link or inject markup into the pull request."""
    text = lookalike.escaped(printable(text))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join("\\" + char if char in _MARKDOWN_PUNCTUATION else char for char in text)


# What acts inside a table cell: escapes, code spans, emphasis, links and images, the cell's end, strikethrough.
_MARKDOWN_PUNCTUATION = frozenset("\\`*_[]()|~")


def _github(text: str) -> str:
    """A workflow-command message: `%`, CR and LF escaped, so a name cannot start a command, and
    invisible characters (bidi controls, zero-width, fillers) written as escapes, so the
    annotation displays what the snapshot holds."""
    return lookalike.escaped(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))
