"""Scenario 1: trainer start, from the adapter's import to a dataset and 8 adapter instances."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import (
    PY,
    Paired,
    Served,
    child_env,
    median,
    run_child,
    trl_env,
)
from bench.scenarios.base import HELPDESK_MODULE, Row, log


def _start_run(
    side: str, served: Served, module: Path | None, extra: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    args = [PY, "-m", "bench.worker", "start", side, served.url, *extra]
    if side == "orlgen":
        args += ["--module", str(module)]
    with served.counting() as counts:
        run = run_child(args, env=trl_env(served.url) if side == "trl" else child_env())
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

    cases = [
        (
            "1a",
            "helpdesk: 300 tasks, all in the snapshot; fresh interpreter",
            helpdesk,
            HELPDESK_MODULE,
            [],
            ["--no-metadata"],
            0,
        ),
        (
            "1b",
            "helpdesk, `datasets` already imported (as after `from trl import GRPOTrainer`)",
            helpdesk,
            HELPDESK_MODULE,
            ["--preimport", "datasets"],
            ["--no-metadata", "--preimport", "datasets"],
            0,
        ),
        (
            "1c",
            "bulk: 20,000 tasks, default snapshot (200 sampled: 50 of the 64 tasks in it)",
            bulk,
            bulk_module,
            [],
            [],
            2,
        ),
    ]
    for row_id, case, served, module, orlgen_extra, trl_extra, allowed in cases:
        wall, reqs = Paired(), Paired()
        last: dict[str, Any] = {}
        for i in range(pairs):
            log(f"1. trainer start {row_id}: pair {i + 1}/{pairs}")
            order = ("orlgen", "trl") if i % 2 == 0 else ("trl", "orlgen")
            got = {}
            for side in order:
                answer, counts = _start_run(side, served, module, orlgen_extra if side == "orlgen" else trl_extra)
                if "error" in answer:
                    raise RuntimeError(f"trainer start {row_id} {side}: {answer['error']}")
                got[side] = (answer, counts)
            wall.add(got["orlgen"][0]["seconds"], got["trl"][0]["seconds"])
            reqs.add(got["orlgen"][1]["total"], got["trl"][1]["total"])
            last = {side: {"answer": a, "requests": c} for side, (a, c) in got.items()}
        details[row_id] = {"wall": wall.summary(), "requests": reqs.summary(), "last": last}
        w, r = wall.summary(), reqs.summary()
        trl_note = (
            (
                f" TRL with include_metadata=False: its default fails on helpdesk's mixed-type `sla_hours` "
                f"({default_trl.get('error', 'no error?')[:40]}…) after {default_counts['total']} requests."
            )
            if "--no-metadata" in trl_extra
            else ""
        )
        by_path = last["orlgen"]["requests"]["by_path"]
        sdk_calls = sum(n for path, n in by_path.items() if not path.endswith(("_session",)))
        phases = {side: last[side]["answer"]["phases"] for side in ("orlgen", "trl")}
        split = (
            f"orlgen: import {phases['orlgen']['import']:.2f} s, build_dataset {phases['orlgen']['dataset']:.2f} s,"
            f" 8 instances {phases['orlgen']['instances'] * 1e3:.0f} ms; TRL: import + spec "
            f"{phases['trl']['import']:.2f} s, train_dataset {phases['trl']['dataset']:.2f} s, 8 factory calls "
            f"{phases['trl']['instances']:.2f} s (last pair)"
        )
        rows.append(
            Row(
                row_id,
                "1 Trainer start",
                case,
                "wall time",
                "s",
                w["orlgen_median"],
                w["trl_median"],
                "≤ 0.10× TRL",
                w["ratio_of_medians"] <= 0.10,
                f"median pair ratio {w['median_pair_ratio']:.3f}. {split}.{trl_note}",
                samples=w,
            )
        )
        rows.append(
            Row(
                row_id,
                "1 Trainer start",
                case,
                "HTTP requests (server-side)",
                "req",
                r["orlgen_median"],
                r["trl_median"],
                f"≤ {allowed}" + (" (from snapshot)" if allowed == 0 else ""),
                r["orlgen_median"] <= allowed,
                (
                    (
                        f"orlgen: {', '.join(f'{k} ×{v}' for k, v in by_path.items())} "
                        f"({sdk_calls} without the SDK's create/delete_session wrapper)"
                    )
                    if by_path
                    else ""
                ),
                samples=r,
            )
        )
        tools = {side: last[side]["answer"]["tools"] for side in ("orlgen", "trl")}
        if row_id == "1a":
            missing = sorted(set(tools["orlgen"]) - set(tools["trl"]))
            rows.append(
                Row(
                    row_id,
                    "1 Trainer start",
                    case,
                    "tools on the adapter class",
                    "tools",
                    len(tools["orlgen"]),
                    len(tools["trl"]),
                    "",
                    None,
                    (
                        f"TRL lacks {', '.join(missing)}: task-only, offered on VIP tasks; TRL probes task 0 only"
                        if missing
                        else ""
                    ),
                )
            )
    # The 20k-task snapshot: every task is in it, so no request, but the whole file is read.
    runs = []
    for _ in range(2):
        answer, counts = _start_run("orlgen", bulk, bulk_all_module, [])
        runs.append((answer["seconds"], counts["total"]))
    details["1d"] = runs
    rows.append(
        Row(
            "1d",
            "1 Trainer start",
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
    )
    return rows, details
