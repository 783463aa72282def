"""`orlgen vet`: lint what the model reads of an environment's tools, before it trains on it.

Read from the snapshot (what every trainer's module shows, decided by the same docstring parser
the plan uses), never by importing generated code. Each finding names its rule; a project sets
which rules are errors (exit 1) and which are not reported, in `[tool.orlgen.vet]`, as it does
for `diff`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from orlgen import lookalike
from orlgen.plan import docstrings
from orlgen.schema import printable
from orlgen.snapshot.model import Snapshot, Tool, confusing_names

Severity = Literal["error", "warning", "info"]

# rule → (default severity, what it finds)
RULES: dict[str, tuple[Severity, str]] = {
    "PARAM_UNDESCRIBED": ("warning", "a parameter neither its schema nor the tool's docstring describes"),
    "TOOL_UNDESCRIBED": ("warning", "a tool with no description"),
    "NAME_LOOKALIKE": ("error", "a tool or parameter name that hides a character or looks like another"),
    "DESCRIPTION_REPEATED": ("warning", "two tools whose descriptions (nearly) repeat each other"),
    "TOOL_BLOCK_SIZE": ("info", "the characters (and tokens) the tool block adds to every prompt"),
}
# Two descriptions this similar (difflib's ratio) tell the model no difference between their tools.
_REPEATED = 0.9


class VetRuleError(ValueError):
    """A rule list names an unknown rule, or a rule twice."""


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    env: str
    subject: str
    detail: str

    def line(self) -> str:
        """One line, whatever the server's names hold."""
        return f"{self.rule:<20} {self.severity:<7} {self.env}: {printable(self.subject)}: {printable(self.detail)}"


@dataclass(frozen=True)
class VetRules:
    """The project's `[tool.orlgen.vet]`: rules raised to errors, lowered to warnings, not reported."""

    error: frozenset[str] = frozenset()
    warning: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()

    @classmethod
    def of(cls, error: Iterable[str] = (), warning: Iterable[str] = (), ignore: Iterable[str] = ()) -> VetRules:
        rules = cls(frozenset(error), frozenset(warning), frozenset(ignore))
        named = [*rules.error, *rules.warning, *rules.ignore]
        unknown = sorted(set(named) - RULES.keys())
        if unknown:
            raise VetRuleError(f"unknown vet rule {unknown[0]!r}; the rules are: {', '.join(sorted(RULES))}")
        twice = sorted(rule for rule in set(named) if named.count(rule) > 1)
        if twice:
            raise VetRuleError(f"{twice[0]} is in two of error/warning/ignore: keep it in one list")
        return rules

    def severity(self, rule: str) -> Severity | None:
        """The rule's severity in this project, None when it is not reported."""
        if rule in self.ignore:
            return None
        if rule in self.error:
            return "error"
        return "warning" if rule in self.warning else RULES[rule][0]


def vet(
    snapshot: Snapshot, rules: VetRules = VetRules(), count_tokens: Callable[[str], int] | None = None
) -> list[Finding]:
    """Every finding on `snapshot`'s tool surface that `rules` report, in rule then subject order."""
    found = [
        *_undescribed(snapshot.tools),
        *_lookalikes(snapshot.tools),
        *_repeated(snapshot.tools),
        _block_size(snapshot.tools, count_tokens),
    ]
    kept = []
    for rule, subject, detail in found:
        severity = rules.severity(rule)
        if severity is not None:
            kept.append(Finding(rule, severity, snapshot.name, subject, detail))
    return sorted(kept, key=lambda finding: (finding.rule, finding.subject))


def tool_block(tools: Iterable[Tool]) -> str:
    """The tools as a chat template lays them into the prompt: one OpenAI function per line, its
    JSON schema as the snapshot holds it (Qwen's and Hermes' `<tools>` block)."""
    return "\n".join(
        json.dumps(
            {
                "type": "function",
                "function": {"name": tool.name, "description": tool.description, "parameters": tool.input_schema or {}},
            },
            ensure_ascii=False,
        )
        for tool in tools
    )


_Raw = tuple[str, str, str]  # rule, subject, detail


def _undescribed(tools: Iterable[Tool]) -> Iterator[_Raw]:
    """Parameters the model sees only by name: no description in the schema nor an `Args:`
    entry in the tool's docstring (the module then writes the name in words, e.g. "Text.")."""
    for tool in tools:
        if not tool.description.strip():
            yield "TOOL_UNDESCRIBED", tool.name, "no description: the model sees the name alone"
        schema = tool.parsed_schema()
        properties = dict(schema.resolve(schema.root).properties)
        documented = docstrings.parse(tool.description, properties).params
        for name, node in properties.items():
            if not (schema.resolve(node).description or node.description or documented.get(name)):
                yield "PARAM_UNDESCRIBED", f"{tool.name}.{name}", "no description in its schema or the tool's docstring"


def _lookalikes(tools: Iterable[Tool]) -> Iterator[_Raw]:
    """Names a model (or a reviewer) can read as other names: among the tools, and among each tool's parameters."""
    for tool, parameter, why in confusing_names(tools):
        if parameter is None:
            yield "NAME_LOOKALIKE", lookalike.escaped(tool), f"tool name {why}"
        else:
            yield "NAME_LOOKALIKE", f"{tool}.{lookalike.escaped(parameter)}", f"parameter name {why}"


def _repeated(tools: Iterable[Tool]) -> Iterator[_Raw]:
    """Pairs of tools whose descriptions say (nearly) the same: the model cannot tell which to call."""
    described = [(tool.name, " ".join(tool.description.split()).lower()) for tool in tools if tool.description.strip()]
    for i, (first, text) in enumerate(described):
        for second, other in described[i + 1 :]:
            ratio = difflib.SequenceMatcher(None, text, other, autojunk=False).ratio()
            if ratio >= _REPEATED:
                yield "DESCRIPTION_REPEATED", f"{first}, {second}", f"descriptions {ratio:.0%} alike"


def _block_size(tools: Iterable[Tool], count_tokens: Callable[[str], int] | None) -> _Raw:
    block = tool_block(tools)
    tokens = f", {count_tokens(block):,} tokens" if count_tokens is not None else ""
    return "TOOL_BLOCK_SIZE", "tools", f"{len(block):,} characters{tokens} in every prompt"
