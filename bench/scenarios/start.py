"""Scenario 1: trainer start, from the adapter's import to a dataset and 8 adapter instances."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from bench.common import HELPDESK_MODULE, Paired, Served, log, median, pair_order
from bench.scenarios.base import Row, run_worker

SCENARIO = "1 Trainer start"


class _Case(NamedTuple):
    row_id: str
    case: str
    served: Served
    module: Path
    orlgen_extra: list[str]
    trl_extra: list[str]
    allowed: int  # HTTP requests orlgen may make

    def extra(self, side: str) -> list[str]:
        return self.orlgen_extra if side == "orlgen" else self.trl_extra


def _start_run(
    side: str, served: Served, module: Path | None, extra: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    run, counts = run_worker("start", side, served, module, extra)
    return run.json(), counts


def trainer_start(
    helpdesk: Served, bulk: Served, bulk_module: Path, bulk_all_module: Path, pairs: int
) -> tuple[list[Row], dict[str, Any]]:
    rows: list[Row] = []
    details: dict[str, Any] = {}
    log("1. trainer start: warm-up runs (discarded)")
    _start_run("orlgen", helpdesk, HELPDESK_MODULE, [])
    _start_run("trl", helpdesk, None, ["--no-metadata"])
    default_trl, default_counts = _start_run("trl", helpdesk, None, [])
    details["helpdesk_trl_default"] = {"answer": default_trl, "requests": default_counts["total"]}
    trl_note = (
        f" TRL with include_metadata=False: its default fails on helpdesk's mixed-type `sla_hours` "
        f"({default_trl.get('error', 'no error?')[:40]}…) after {default_counts['total']} requests."
    )
    for case in _cases(helpdesk, bulk, bulk_module):
        wall, reqs, last = _pairs(case, pairs)
        details[case.row_id] = {"wall": wall.summary(), "requests": reqs.summary(), "last": last}
        note = trl_note if "--no-metadata" in case.trl_extra else ""
        rows += [_wall_row(case, wall.summary(), last, note), _requests_row(case, reqs.summary(), last)]
        if case.row_id == "1a":
            rows.append(_tools_row(case, last))
    row, details["1d"] = _all_tasks(bulk, bulk_all_module)
    rows.append(row)
    return rows, details


def _cases(helpdesk: Served, bulk: Served, bulk_module: Path) -> list[_Case]:
    return [
        _Case(
            "1a",
            "helpdesk: 300 tasks, all in the snapshot; fresh interpreter",
            helpdesk,
            HELPDESK_MODULE,
            [],
            ["--no-metadata"],
            0,
        ),
        _Case(
            "1b",
            "helpdesk, `datasets` already imported (as after `from trl import GRPOTrainer`)",
            helpdesk,
            HELPDESK_MODULE,
            ["--preimport", "datasets"],
            ["--no-metadata", "--preimport", "datasets"],
            0,
        ),
        _Case(
            "1c",
            "bulk: 20,000 tasks, default snapshot (200 sampled: 50 of the 64 tasks in it)",
            bulk,
            bulk_module,
            [],
            [],
            2,
        ),
    ]


def _pairs(case: _Case, pairs: int) -> tuple[Paired, Paired, dict[str, Any]]:
    """Wall time and requests of both sides in alternating pairs; the last pair's answers."""
    wall, reqs = Paired(), Paired()
    last: dict[str, Any] = {}
    for i in range(pairs):
        log(f"1. trainer start {case.row_id}: pair {i + 1}/{pairs}")
        got = {side: _checked_run(case, side) for side in pair_order(i)}
        wall.add(got["orlgen"][0]["seconds"], got["trl"][0]["seconds"])
        reqs.add(got["orlgen"][1]["total"], got["trl"][1]["total"])
        last = {side: {"answer": a, "requests": c} for side, (a, c) in got.items()}
    return wall, reqs, last


def _checked_run(case: _Case, side: str) -> tuple[dict[str, Any], dict[str, Any]]:
    answer, counts = _start_run(side, case.served, case.module, case.extra(side))
    if "error" in answer:
        raise RuntimeError(f"trainer start {case.row_id} {side}: {answer['error']}")
    return answer, counts


def _wall_row(case: _Case, w: dict[str, Any], last: dict[str, Any], trl_note: str) -> Row:
    phases = {side: last[side]["answer"]["phases"] for side in ("orlgen", "trl")}
    split = (
        f"orlgen: import {phases['orlgen']['import']:.2f} s, build_dataset {phases['orlgen']['dataset']:.2f} s,"
        f" 8 instances {phases['orlgen']['instances'] * 1e3:.0f} ms; TRL: import + spec "
        f"{phases['trl']['import']:.2f} s, train_dataset {phases['trl']['dataset']:.2f} s, 8 factory calls "
        f"{phases['trl']['instances']:.2f} s (last pair)"
    )
    return Row(
        case.row_id,
        SCENARIO,
        case.case,
        "wall time",
        "s",
        w["orlgen_median"],
        w["trl_median"],
        "≤ 0.10× TRL",
        w["ratio_of_medians"] <= 0.10,
        f"median pair ratio {w['median_pair_ratio']:.3f}. {split}.{trl_note}",
        samples=w,
    )


def _requests_row(case: _Case, r: dict[str, Any], last: dict[str, Any]) -> Row:
    by_path = last["orlgen"]["requests"]["by_path"]
    sdk_calls = sum(n for path, n in by_path.items() if not path.endswith(("_session",)))
    note = (
        f"orlgen: {', '.join(f'{k} ×{v}' for k, v in by_path.items())} "
        f"({sdk_calls} without the SDK's create/delete_session wrapper)"
    )
    return Row(
        case.row_id,
        SCENARIO,
        case.case,
        "HTTP requests (server-side)",
        "req",
        r["orlgen_median"],
        r["trl_median"],
        f"≤ {case.allowed}" + (" (from snapshot)" if case.allowed == 0 else ""),
        r["orlgen_median"] <= case.allowed,
        note if by_path else "",
        samples=r,
    )


def _tools_row(case: _Case, last: dict[str, Any]) -> Row:
    tools = {side: last[side]["answer"]["tools"] for side in ("orlgen", "trl")}
    missing = sorted(set(tools["orlgen"]) - set(tools["trl"]))
    return Row(
        case.row_id,
        SCENARIO,
        case.case,
        "tools on the adapter class",
        "tools",
        len(tools["orlgen"]),
        len(tools["trl"]),
        "",
        None,
        (f"TRL lacks {', '.join(missing)}: task-only, offered on VIP tasks; TRL probes task 0 only" if missing else ""),
    )


def _all_tasks(bulk: Served, bulk_all_module: Path) -> tuple[Row, list[tuple[float, int]]]:
    """The 20k-task snapshot: every task is in it, so no request, but the whole file is read."""
    runs = []
    for _ in range(2):
        answer, counts = _start_run("orlgen", bulk, bulk_all_module, [])
        runs.append((answer["seconds"], counts["total"]))
    row = Row(
        "1d",
        SCENARIO,
        "bulk, snapshot with all 20,000 tasks (11 MB), orlgen only",
        "wall time",
        "s",
        median([s for s, _ in runs]),
        None,
        "",
        None,
        f"{median([n for _, n in runs]):.0f} requests; build_dataset parses the whole snapshot " "to take 64 tasks",
        samples={"orlgen": runs},
    )
    return row, runs
