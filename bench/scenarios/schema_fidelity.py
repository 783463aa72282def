"""Scenario 7: schema fidelity (`bench.fidelity.measure`) as table rows."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from bench.common import log
from bench.scenarios.base import Row


def fidelity() -> tuple[list[Row], dict[str, Any]]:
    log("7. schema fidelity (bench.fidelity.measure)")
    from bench.fidelity import measure

    with contextlib.redirect_stdout(sys.stderr):
        result = measure()
    orlgen, trl = result.counts("orlgen"), result.counts("trl")
    facts = result.facts()
    tools = sum(result.tools.values())
    prompt = {side: sum(sizes[side] for sizes in result.prompt.values()) for side in ("raw", "orlgen", "trl")}
    hidden = {
        binder: len({(o.fact.group, o.fact.tool) for o in result.lost(binder) if o.reason.startswith("tool not shown")})
        for binder in ("orlgen", "trl")
    }
    rows = [
        Row(
            "7",
            "7 Fidelity",
            f"{tools} tools, {facts} schema facts (examples, SDK toolsets, hostile)",
            "facts lost",
            "facts",
            orlgen["lost"],
            trl["lost"],
            "0 lost",
            orlgen["lost"] == 0,
            f"structural {orlgen['structural']} vs {trl['structural']}; as text {orlgen['text']} vs {trl['text']}",
        ),
        Row(
            "7",
            "7 Fidelity",
            "〃",
            "tools not shown to the model",
            "tools",
            hidden["orlgen"],
            hidden["trl"],
            "",
            None,
            "",
        ),
        Row(
            "7",
            "7 Fidelity",
            "〃",
            "facts altered (text changed, name needlessly changed)",
            "facts",
            len(result.altered("orlgen")),
            len(result.altered("trl")),
            "0 altered on examples",
            not result.altered("orlgen", "examples"),
            "",
        ),
        Row(
            "7",
            "7 Fidelity",
            "〃",
            "prompt size (tools JSON the model sees)",
            "chars",
            prompt["orlgen"],
            prompt["trl"],
            "",
            None,
            f"raw schemas {prompt['raw']}",
        ),
    ]
    return rows, {"summary": result.to_json()["total"], "seconds": result.seconds}
