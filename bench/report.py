"""The results table, as terminal text or Markdown. `python -m bench.report` prints the Markdown
table of the last run (bench/results.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results.json"


# How a figure of each unit reads; times and rates first, as they were, NaN or not.
_TIMES = {
    "s": lambda n: f"{n:.2f} s" if n >= 0.1 else f"{n * 1e3:.0f} ms",
    "ms": lambda n: f"{n:.1f} ms" if n < 100 else f"{n:.0f} ms",
    "/s": lambda n: f"{n:.1f}/s",
}
_WHOLE = {"µs": "{:.0f} µs", "%": "{:.0f}%", "MB": "{:.0f} MB"}
_COUNTS = ("req", "facts", "tools", "")


def value(number: float | None, unit: str) -> str:
    if number is None:
        return "—"
    if unit in _TIMES:
        return _TIMES[unit](number)
    if number != number:
        return "—"
    if unit in _WHOLE:
        return _WHOLE[unit].format(number)
    if unit in _COUNTS:
        return f"{number:.0f}" if float(number).is_integer() else f"{number:.1f}"
    return f"{number:g} {unit}"


def ratio(row: dict[str, Any]) -> str:
    r = row.get("ratio")
    if r is None:
        return "—" if row.get("trl") is None else ("0" if row.get("orlgen") == 0 else "—")
    return f"{r:.3f}" if r < 0.1 else f"{r:.2f}"


def verdict(row: dict[str, Any]) -> str:
    met = row.get("met")
    return "" if met is None else ("met" if met else "MISSED")


def text_table(rows: list[dict[str, Any]]) -> str:
    widths = (34, 12, 12, 11, 22, 7)
    header = ("metric", "orlgen", "TRL", "orlgen/TRL", "target", "")
    lines = []
    scenario = case = None
    rule = "─" * (sum(widths) + len(widths) * 2 + 4)
    lines += [rule, "      " + _cells(header, widths), rule]
    for row in rows:
        if row["scenario"] != scenario:
            scenario = row["scenario"]
            if lines[-1] != rule:
                lines.append("")
            lines.append(scenario)
            case = None
        if row["case"] != "〃" and row["case"] != case:
            case = row["case"]
            lines.append(f"  {row['id']:<4}{case}")
        cells = (
            row["metric"],
            value(row["orlgen"], row["unit"]),
            value(row["trl"], row["unit"]),
            ratio(row),
            row["target"],
            verdict(row),
        )
        lines.append("      " + _cells(cells, widths))
        if row.get("note"):
            lines.append(f"        ↳ {row['note']}")
    lines.append(rule)
    return "\n".join(lines)


def _cells(cells: tuple[str, ...], widths: tuple[int, ...]) -> str:
    out = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=False)):
        out.append(f"{cell:<{width}}" if i in (0, 4) else f"{cell:>{width}}")
    return "  ".join(out).rstrip()


def markdown_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| # | case | metric | orlgen | TRL | orlgen / TRL | target | |", "|---|---|---|---|---|---|---|---|"]
    case = None
    for row in rows:
        current = row["case"] if row["case"] != "〃" else case
        shown = "〃" if current == case else current
        case = current
        lines.append(
            f"| {row['id']} | {shown} | {row['metric']} | {value(row['orlgen'], row['unit'])} | "
            f"{value(row['trl'], row['unit'])} | {ratio(row)} | {row['target']} | "
            f"{'**MISSED**' if row.get('met') is False else verdict(row)} |"
        )
    return "\n".join(lines)


def main() -> int:
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    print(markdown_table(data["rows"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
