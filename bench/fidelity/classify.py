"""Classification: each fact found structurally, as text, or lost in what a binder shows."""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Any

from bench.fidelity.facts import Fact
from bench.fidelity.phrases import _TYPE_STARTS, _TYPE_WORDS, _constraint_re, _squash, _value_forms, _value_re
from bench.fidelity.schema_walk import JSON
from bench.fidelity.shown import (
    _brief,
    _find_param,
    _nested_nodes,
    _nested_structural,
    _out_branches,
    _out_types,
    _same,
    _texts,
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
