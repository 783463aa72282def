"""The text report of a measurement."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.fidelity.classify import STATUSES
from bench.fidelity.facts import KINDS
from bench.fidelity.measure import BINDERS, Result
from bench.fidelity.sets import SETS


def _row(label: str, tools: Any, facts: int, *counts: dict[str, int]) -> str:
    """One line: the label, then a (structural, text, lost) triple per binder (`BINDERS`' order)."""
    triples = ["   " + " ".join(f"{found[s]:>6}" for s in STATUSES) for found in counts]
    return f"{label:<19}{tools:>6}{facts:>7}" + "".join(triples)


def report(result: Result) -> str:
    """The report's sections, in order: facts by set and by kind (orlgen's TRL module, TRL's
    binder, orlgen's agent module, orlgen's verl tool YAML), altered facts, prompt size, output
    blocks, the facts each binder loses, functions shown that are no tool."""
    sections = (_facts, _altered, _prompt, _blocks, _lost, _extra)
    return "\n".join(line for section in sections for line in section(result))


def _facts(result: Result) -> list[str]:
    statuses = " ".join(f"{s[:6]:>6}" for s in STATUSES)
    header = (
        f"{'':<19}{'':>6}{'':>7}   {'orlgen (TRL)':^20}   {'TRL OpenRewardSpec':^20}   {'orlgen agent TOOLS':^20}"
        f"   {'orlgen verl YAML':^20}\n"
        f"{'schema set':<19}{'tools':>6}{'facts':>7}" + f"   {statuses}" * len(BINDERS)
    )
    lines = [
        "Schema facts reaching the model (transformers.utils.get_json_schema of each tool method; for the",
        "agent module, each function of TOOLS as sent, `$ref`s read through to its `$defs`; for verl, each",
        "function of the tool YAML, which holds what verl's OpenAIFunctionToolSchema keeps)",
        "",
        header,
    ]
    for s in SETS:
        lines.append(_row(s, result.tools[s], result.facts(s), *(result.counts(b, s) for b in BINDERS)))
    lines.append(_row("total", sum(result.tools.values()), result.facts(), *(result.counts(b) for b in BINDERS)))
    lines += ["", "By fact kind (all sets)", header.replace("schema set", "fact kind ").replace("tools", "     ")]
    for k in KINDS:
        lines.append(_row(k, "", result.facts(kind=k), *(result.counts(b, kind=k) for b in BINDERS)))
    return lines


def _altered(result: Result) -> list[str]:
    lines = [
        "",
        "Facts altered on the way (shown, but not as written: text changed, parameter renamed)",
        f"{'schema set':<14}{'orlgen':>8}{'TRL':>8}{'agent':>8}{'verl':>8}",
    ]
    for s in [*SETS, None]:
        lines.append(f"{s or 'total':<14}" + "".join(f"{len(result.altered(b, s)):>8}" for b in BINDERS))
    for binder in ("orlgen", "agent", "verl"):
        altered = result.altered(binder)
        lines += [f"  {binder}: [{o.fact.set_name}/{o.fact.group}] {o.fact.label()}" for o in altered]
    return lines


def _prompt(result: Result) -> list[str]:
    lines = [
        "",
        "Prompt size: characters of the tools JSON the model sees (chat template `tojson`), per module",
        f"{'module':<34}{'raw':>8}{'orlgen':>8}{'TRL':>8}{'agent':>8}{'verl':>8}{'orlgen/raw':>12}{'orlgen/TRL':>12}"
        f"{'agent/raw':>11}{'verl/raw':>10}",
    ]
    for name, sizes in result.prompt.items():
        agent, verl = result.agent_prompt.get(name, 0), result.verl_prompt.get(name, 0)
        lines.append(
            f"{name:<34}{sizes['raw']:>8}{sizes['orlgen']:>8}{sizes['trl']:>8}{agent:>8}{verl:>8}"
            f"{_ratio(sizes['orlgen'], sizes['raw']):>12}{_ratio(sizes['orlgen'], sizes['trl']):>12}"
            f"{_ratio(agent, sizes['raw']):>11}{_ratio(verl, sizes['raw']):>10}"
        )
    return lines


def _blocks(result: Result) -> list[str]:
    if not result.blocks:
        return []
    lines = [
        "",
        "Output blocks reaching the model (bench/blocks_env.py through the generated adapter)",
        f"{'block type':<14}{'sent':>8}{'dropped':>9}",
    ]
    return lines + [f"{kind:<14}{n['sent']:>8}{n['dropped']:>9}" for kind, n in result.blocks.items()]


def _lost(result: Result) -> list[str]:
    """orlgen's lost facts (TRL module, agent module, verl tool YAML) one by one; TRL's counted
    by set and reason."""
    lines = []
    for binder, name in (("orlgen", "orlgen"), ("agent", "orlgen's agent module"), ("verl", "orlgen's verl tool YAML")):
        lost = result.lost(binder)
        lines += ["", f"Facts {name} loses: {len(lost)}"]
        lines += [f"  [{o.fact.set_name}/{o.fact.group}] {o.fact.label()}\n      -> {o.reason}" for o in lost]
    lost = result.lost("trl")
    lines += ["", f"Facts TRL loses: {len(lost)}"]
    by_reason = Counter(
        (o.fact.set_name, o.reason if o.reason.startswith("tool not shown") else f"{o.fact.kind}") for o in lost
    )
    return lines + [f"  {n:>4}  [{s}] {r}" for (s, r), n in sorted(by_reason.items(), key=lambda x: (-x[1], x[0]))]


def _extra(result: Result) -> list[str]:
    return [f"\nFunctions {binder} shows that are no tool: {names}" for binder, names in result.extra.items() if names]


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"
