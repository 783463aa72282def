"""The text report of a measurement."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench.fidelity.classify import STATUSES
from bench.fidelity.facts import KINDS
from bench.fidelity.measure import Result
from bench.fidelity.sets import SETS


def _row(label: str, tools: Any, facts: int, orl: dict[str, int], trl: dict[str, int]) -> str:
    cells = [f"{orl[s]:>6}" for s in STATUSES] + [f"{trl[s]:>6}" for s in STATUSES]
    return f"{label:<19}{tools:>6}{facts:>7}   " + " ".join(cells[:3]) + "   " + " ".join(cells[3:])


def report(result: Result) -> str:
    """The report's sections, in order: facts by set and by kind, altered facts, prompt size,
    output blocks, the facts each binder loses, functions shown that are no tool."""
    sections = (_facts, _altered, _prompt, _blocks, _lost, _extra)
    return "\n".join(line for section in sections for line in section(result))


def _facts(result: Result) -> list[str]:
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
    return lines


def _altered(result: Result) -> list[str]:
    lines = [
        "",
        "Facts altered on the way (shown, but not as written: text changed, parameter renamed)",
        f"{'schema set':<14}{'orlgen':>8}{'TRL':>8}",
    ]
    for s in SETS:
        lines.append(f"{s:<14}{len(result.altered('orlgen', s)):>8}{len(result.altered('trl', s)):>8}")
    lines.append(f"{'total':<14}{len(result.altered('orlgen')):>8}{len(result.altered('trl')):>8}")
    return lines + [f"  [{o.fact.set_name}/{o.fact.group}] {o.fact.label()}" for o in result.altered("orlgen")]


def _prompt(result: Result) -> list[str]:
    lines = [
        "",
        "Prompt size: characters of the tools JSON the model sees (chat template `tojson`), per module",
        f"{'module':<34}{'raw':>8}{'orlgen':>8}{'TRL':>8}{'orlgen/raw':>12}{'orlgen/TRL':>12}",
    ]
    for name, sizes in result.prompt.items():
        lines.append(
            f"{name:<34}{sizes['raw']:>8}{sizes['orlgen']:>8}{sizes['trl']:>8}"
            f"{_ratio(sizes['orlgen'], sizes['raw']):>12}{_ratio(sizes['orlgen'], sizes['trl']):>12}"
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
    """orlgen's lost facts one by one; TRL's counted by set and reason."""
    lost = result.lost("orlgen")
    lines = ["", f"Facts orlgen loses: {len(lost)}"]
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
