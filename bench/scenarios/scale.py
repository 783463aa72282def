"""Scenario 6: the scale of capture: `orlgen snapshot --tasks all`, build_dataset and check at 20,000 tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import ORLGEN_CLI, Paired, Served, log, median, pair_order, run_child
from bench.scenarios.base import Row, run_worker


def capture(served: Served, out: Path, name: str, extra: list[str]) -> tuple[Any, dict[str, Any]]:
    with served.counting() as counts:
        run = run_child([ORLGEN_CLI, "snapshot", served.url, "--name", name, "--out", str(out), *extra], cwd=out)
    if run.returncode:
        raise RuntimeError(f"orlgen snapshot failed: {run.stderr[-800:]}")
    return run, counts


def capture_row(run: Any, counts: dict[str, Any]) -> Row:
    """`orlgen snapshot URL` at its defaults: wall time, requests and peak memory in the note."""
    return Row(
        "6",
        "6 Scale of capture",
        "`orlgen snapshot URL` at defaults (200 of 20,000 tasks)",
        "wall time",
        "s",
        run.seconds,
        None,
        "",
        None,
        f"{counts['total']} HTTP requests, peak RSS {run.max_rss_mb:.0f} MB",
    )


def scale(
    bulk: Served, out: Path, capture_all: tuple[Any, dict[str, Any]], pairs: int
) -> tuple[list[Row], dict[str, Any]]:
    snapshot = out / "bulk_all.snapshot.json"
    rows, details = _capture_rows(capture_all, snapshot)
    dataset_rows, details["build_dataset"] = _build_dataset(bulk, out / "bulk_all.py", pairs)
    check_row, details["check_20k"] = _check(snapshot, out)
    return [*rows, *dataset_rows, check_row], details


def _capture_rows(capture_all: tuple[Any, dict[str, Any]], snapshot: Path) -> tuple[list[Row], dict[str, Any]]:
    """`orlgen snapshot --tasks all`: requests, wall time, peak memory."""
    run, counts = capture_all
    size_mb = snapshot.stat().st_size / 1e6
    by_path = counts["by_path"]
    ranges = by_path.get("POST /bulk/task_range", 0)
    rows = [
        Row(
            "6",
            "6 Scale of capture",
            "`orlgen snapshot URL --tasks all`, 20,000 tasks",
            "HTTP requests",
            "req",
            counts["total"],
            None,
            "",
            None,
            f"{ranges} task_range (500 tasks each) + discovery and 3 probe sessions; every SDK call adds "
            f"create_session + delete_session ({by_path.get('POST /create_session', 0)} each)",
        ),
        Row(
            "6",
            "6 Scale of capture",
            "〃",
            "wall time",
            "s",
            run.seconds,
            None,
            "",
            None,
            f"snapshot {size_mb:.1f} MB, module rendered too",
        ),
        Row("6", "6 Scale of capture", "〃", "peak RSS", "MB", run.max_rss_mb, None, "", None, "of the orlgen process"),
    ]
    details: dict[str, Any] = {
        "capture": {"seconds": run.seconds, "max_rss_mb": run.max_rss_mb, "requests": counts, "snapshot_mb": size_mb}
    }
    return rows, details


def _build_dataset(bulk: Served, module: Path, pairs: int) -> tuple[list[Row], dict[str, Any]]:
    """build_dataset() over every task against TRL's train_dataset, in alternating pairs."""
    wall, rss, reqs = Paired(), Paired(), Paired()
    for i in range(pairs):
        log(f"6. build_dataset over 20,000 tasks: pair {i + 1}/{pairs}")
        got = {side: _dataset_run(bulk, module, side) for side in pair_order(i)}
        wall.add(got["orlgen"][0], got["trl"][0])
        rss.add(got["orlgen"][1], got["trl"][1])
        reqs.add(got["orlgen"][2], got["trl"][2])
    w, m, r = wall.summary(), rss.summary(), reqs.summary()
    case = "build_dataset() over all 20,000 tasks (TRL: OpenRewardSpec(url).train_dataset, one list_tasks)"
    rows = [
        Row(
            "6d",
            "6 Scale of capture",
            case,
            "wall time",
            "s",
            w["orlgen_median"],
            w["trl_median"],
            "",
            None,
            "in the child, from import to Dataset",
            samples=w,
        ),
        Row(
            "6d",
            "6 Scale of capture",
            "〃",
            "HTTP requests",
            "req",
            r["orlgen_median"],
            r["trl_median"],
            "",
            None,
            "",
            samples=r,
        ),
        Row(
            "6d",
            "6 Scale of capture",
            "〃",
            "peak RSS",
            "MB",
            m["orlgen_median"],
            m["trl_median"],
            "",
            None,
            "whole child process",
            samples=m,
        ),
    ]
    return rows, {"wall": w, "rss": m, "requests": r}


def _dataset_run(bulk: Served, module: Path, side: str) -> tuple[float, float, int, int]:
    """One side's dataset child: seconds, peak RSS, requests, rows."""
    child, counts = run_worker("dataset", side, bulk, module)
    answer = child.json()
    if "error" in answer:
        raise RuntimeError(f"dataset {side}: {answer['error']}")
    return answer["seconds"], child.max_rss_mb, counts["total"], answer["rows"]


def _check(snapshot: Path, out: Path) -> tuple[Row, dict[str, Any]]:
    log("6. orlgen check on the 20,000-task snapshot")
    checks = [run_child([ORLGEN_CLI, "check", "--no-cache", str(snapshot)], cwd=out) for _ in range(2)]
    seconds = median([c.seconds for c in checks])
    details = {
        "seconds": [c.seconds for c in checks],
        "cpu_s": [c.cpu_seconds for c in checks],
        "returncodes": [c.returncode for c in checks],
    }
    row = Row(
        "6c",
        "6 Scale of capture",
        "`orlgen check` of the 20,000-task snapshot (2 tools)",
        "wall time",
        "s",
        seconds,
        None,
        "≤ 1 s",
        seconds <= 1.0,
        "no cache: the tasks file is verified as bytes (one C decode and encode), the module re-rendered",
    )
    return row, details
