"""Classification: each fact found structurally, as text, or lost in what a binder shows."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.fidelity.facts import Fact
from bench.fidelity.phrases import (
    DEFAULT_WORDS,
    TYPE_STARTS,
    TYPE_WORDS,
    constraint_re,
    enum_value_re,
    unspaced,
    value_re,
)
from bench.fidelity.schema_walk import JSON
from bench.fidelity.shown import (
    brief,
    find_param,
    nested_nodes,
    nested_structural,
    same_json,
    shown_branches,
    shown_types,
    texts_of,
)
from bench.fidelity.views import View

STATUSES = ("structural", "text", "lost")


@dataclass(frozen=True)
class Outcome:
    fact: Fact
    status: str
    reason: str = ""
    altered: bool = False  # shown, but not as written (text changed, or a parameter renamed)


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
        altered = not any(_spaced(fact.value) in _spaced(text) for text in texts_of(fn))
    else:
        return outcome
    return Outcome(fact, outcome.status, outcome.reason, altered)


def _spaced(text: str) -> str:
    return " ".join(str(text).split())


def _classify(fact: Fact, view: View) -> Outcome:
    fn = view.functions.get(fact.tool)
    if fn is None:
        return Outcome(fact, "lost", f"tool not shown: {view.missing.get(fact.tool, 'unknown')}")
    tool_level = _tool_level(fact, fn)
    if tool_level is not None:
        return tool_level
    shown = _shown_param(fact, fn)
    if isinstance(shown, Outcome):
        return shown
    by_kind = _BY_KIND.get(fact.kind)
    if by_kind is None:
        raise AssertionError(fact.kind)
    return by_kind(shown)


def _tool_level(fact: Fact, fn: JSON) -> Outcome | None:
    """The facts of the tool itself (present, description, Returns); None for a parameter's."""
    if fact.kind == "tool-present":
        return Outcome(fact, "structural")
    if fact.kind == "description" and not fact.path:
        return _classify_description(fact, str(fn.get("description") or ""), texts_of(fn))
    if fact.kind == "returns":
        return _classify_description(fact, str((fn.get("return") or {}).get("description") or ""), texts_of(fn))
    return None


@dataclass(frozen=True)
class _Shown:
    """A parameter's fact and what the model is shown of that parameter."""

    fact: Fact
    fn: JSON  # the function's JSON
    required: list[str]  # the shown function's required parameters
    name: str  # the shown parameter's name (may differ from the wire name)
    wire: str
    out: JSON  # the shown parameter's schema
    desc: str  # its description
    types: set[str]

    @property
    def rest(self) -> str:
        """The fact's path below the parameter (`[0]`, `{}`, `.field[].leaf`)."""
        return self.fact.path[len(self.wire) :]

    @property
    def leaf(self) -> str:
        """The nested field a `nested*` fact is about."""
        parts = re.split(r"[.\[\]{}]+", self.fact.path)
        return parts[-1] or parts[-2]

    def structural(self) -> Outcome:
        return Outcome(self.fact, "structural")

    def lost(self, reason: str) -> Outcome:
        return Outcome(self.fact, "lost", reason)

    def text_or_lost(self, pattern: str, flags: int = 0, what: str = "") -> Outcome:
        """`text` when the parameter's description matches `pattern`, else lost."""
        if pattern and re.search(pattern, self.desc, flags):
            return Outcome(self.fact, "text")
        return self.lost(what or f"model sees {brief(self.out)}")


def _shown_param(fact: Fact, fn: JSON) -> _Shown | Outcome:
    """The shown parameter the fact's path starts at, or the outcome of a parameter not shown."""
    parameters = fn.get("parameters") or {}
    properties = parameters.get("properties") or {}
    wire = re.split(r"[.\[{]", fact.path, maxsplit=1)[0]
    name = find_param(properties, wire)
    if name is None:
        return Outcome(fact, "lost", f"param {wire!r} not shown (model sees {sorted(properties)})")
    out = properties[name]
    desc = str(out.get("description") or "")
    return _Shown(fact, fn, parameters.get("required") or [], name, wire, out, desc, shown_types(out))


def _has(nodes: list[JSON], key: str, value: Any) -> bool:
    """Whether one of `nodes` has keyword `key` with this value."""
    return any(key in b and same_json(b[key], value) for b in nodes)


def _param_description(p: _Shown) -> Outcome:
    return _classify_description(p.fact, p.desc, texts_of(p.fn))


def _type(p: _Shown) -> Outcome:
    if p.fact.value in p.types:
        return p.structural()
    return p.text_or_lost(rf"\b(?:{TYPE_WORDS[p.fact.value]})\b")


def _nullable(p: _Shown) -> Outcome:
    if "null" in p.types:
        return p.structural()
    return p.text_or_lost(r"\b(?:null|None|nullable)\b")


def _required(p: _Shown) -> Outcome:
    shown = p.name in p.required
    if shown == (p.fact.value == "required"):
        return p.structural()
    return p.text_or_lost(
        r"\brequired\b" if p.fact.value == "required" else r"\b(?:optional|default)\b",
        re.IGNORECASE,
        f"model marks it {'required' if shown else 'optional'}",
    )


def _enum(p: _Shown) -> Outcome:
    nodes = shown_branches(p.out)
    if p.fact.path.endswith("[]"):  # an enum of array items
        nodes = [i for b in nodes if isinstance(b.get("items"), dict) for i in shown_branches(b["items"])]
    if any(_enum_shown(b, p.fact.value) for b in nodes):
        return p.structural()
    return p.text_or_lost(enum_value_re(p.fact.value))


def _enum_shown(b: JSON, value: Any) -> bool:
    return any(same_json(v, value) for v in b.get("enum") or []) or _has([b], "const", value)


def _default(p: _Shown) -> Outcome:
    if _has(shown_branches(p.out), "default", p.fact.value):
        return p.structural()
    return p.text_or_lost(rf"{DEFAULT_WORDS}\s*[:=]?\s*{value_re(p.fact.value)}")


def _constraint(p: _Shown) -> Outcome:
    ((key, value),) = p.fact.value.items()
    if _has(shown_branches(p.out), key, value):
        return p.structural()
    return p.text_or_lost(constraint_re(key, value), re.IGNORECASE)


def _items(p: _Shown) -> Outcome:
    """Item types: per position of a tuple (`[0]`), of a map's values (`{}`), of a list (`[]`)."""
    position = re.fullmatch(r"\[(\d+)\]", p.rest)
    if any(_items_shown(b, p.rest, position, p.fact.value) for b in shown_branches(p.out)):
        return p.structural()
    start = TYPE_STARTS[p.fact.value]
    if p.rest == "{}":
        return p.text_or_lost(rf"(?:dict\[str,\s*|\{{\s*str\s*:\s*|values?:?\s*)(?:{start})")
    if position:
        return p.lost(f"model sees {brief(p.out)}")
    return p.text_or_lost(rf"(?:\[\s*|list\[\s*|(?:list|array) of\s+)(?:{start})")


def _items_shown(b: JSON, rest: str, position: re.Match[str] | None, value: str) -> bool:
    if position:
        fixed = b.get("prefixItems")
        index = int(position[1])
        return isinstance(fixed, list) and index < len(fixed) and value in shown_types(fixed[index])
    if rest == "{}":
        return value in shown_types(b.get("additionalProperties"))
    return value in shown_types(b.get("items"))


def _nested_field(p: _Shown) -> Outcome:
    if nested_structural(p.out, p.rest, p.fact.value):
        return p.structural()
    starts = "|".join(TYPE_STARTS[t] for t in p.fact.value.split(" | ") if TYPE_STARTS[t])
    after = rf"\s*(?:{starts})" if starts and "any" not in p.fact.value else ""
    return p.text_or_lost(rf"(?<![\w-]){re.escape(p.leaf)}\??\s*:{after}")


# A nested field's description, constraint or default: structural when the shown schema has it at
# that field (get_json_schema cannot), text when the parameter's description says it in the
# field's own part: from `leaf:` (or `leaf?:`) to the next sibling field's name.


def _nested_branches(p: _Shown) -> list[JSON]:
    return [b for node in nested_nodes(p.out, p.rest) for b in shown_branches(node)]


def _nested_description(p: _Shown) -> Outcome:
    said = unspaced(p.fact.value)
    if any(said in unspaced(str(b.get("description") or "")) for b in _nested_branches(p)):
        return p.structural()
    return _in_part(p.fact, p.desc, p.leaf, lambda part: said in unspaced(part))


def _nested_constraint(p: _Shown) -> Outcome:
    ((key, value),) = p.fact.value.items()
    if _has(_nested_branches(p), key, value):
        return p.structural()
    pattern = re.compile(constraint_re(key, value), re.IGNORECASE)
    return _in_part(p.fact, p.desc, p.leaf, lambda part: pattern.search(part) is not None)


def _nested_default(p: _Shown) -> Outcome:
    if _has(_nested_branches(p), "default", p.fact.value):
        return p.structural()
    pattern = re.compile(rf"(?:=|{DEFAULT_WORDS}\s*[:=]?)\s*{value_re(p.fact.value)}")
    return _in_part(p.fact, p.desc, p.leaf, lambda part: pattern.search(part) is not None)


_BY_KIND: dict[str, Callable[[_Shown], Outcome]] = {
    "param-name": _Shown.structural,
    "description": _param_description,
    "type": _type,
    "nullable": _nullable,
    "required": _required,
    "enum": _enum,
    "default": _default,
    "constraint": _constraint,
    "items": _items,
    "nested": _nested_field,
    "nested-description": _nested_description,
    "nested-constraint": _nested_constraint,
    "nested-default": _nested_default,
}


def _in_part(fact: Fact, desc: str, leaf: str, says: Any) -> Outcome:
    """`text` when some part of `desc` that belongs to the field `leaf` says the fact."""
    marker = re.compile(rf"(?<![\w-]){re.escape(leaf)}\??\s*:")
    others = [re.compile(rf"(?<![\w-]){re.escape(name)}\??\s*:") for name in fact.siblings]
    for found in marker.finditer(desc):
        ends = [m.start() for other in others if (m := other.search(desc, found.end()))]
        if says(desc[found.end() : min(ends, default=len(desc))]):
            return Outcome(fact, "text")
    return Outcome(fact, "lost", f"not said in the part of the description about {leaf!r}: {desc[:100]!r}")


def _classify_description(fact: Fact, own: str, everywhere: list[str]) -> Outcome:
    source = unspaced(fact.value)
    if source in unspaced(own):
        return Outcome(fact, "structural")
    if any(source in unspaced(text) for text in everywhere):
        return Outcome(fact, "text")
    # The longest prefix shown anywhere, for the reason.
    lo, hi = 0, len(source)
    joined = [unspaced(t) for t in everywhere]
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
