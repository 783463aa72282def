"""Scenario 6: the scale of capture: `orlgen snapshot --tasks all`, build_dataset and check at 20,000 tasks."""

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
from bench.scenarios.base import ORLGEN_CLI, Row, log


def capture(served: Served, out: Path, name: str, extra: list[str]) -> tuple[Any, dict[str, Any]]:
    with served.counting() as counts:
        run = run_child([ORLGEN_CLI, "snapshot", served.url, "--name", name, "--out", str(out), *extra], cwd=out)
    if run.returncode:
        raise RuntimeError(f"orlgen snapshot failed: {run.stderr[-800:]}")
    return run, counts


def scale(
    bulk: Served, out: Path, capture_all: tuple[Any, dict[str, Any]], pairs: int
) -> tuple[list[Row], dict[str, Any]]:
    run, counts = capture_all
    snapshot = out / "bulk_all.snapshot.json"
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
    module = out / "bulk_all.py"
    wall, rss, reqs = Paired(), Paired(), Paired()
    for i in range(pairs):
        log(f"6. build_dataset over 20,000 tasks: pair {i + 1}/{pairs}")
        got = {}
        for side in (("orlgen", "trl") if i % 2 == 0 else ("trl", "orlgen")):
            args = [PY, "-m", "bench.worker", "dataset", side, bulk.url]
            if side == "orlgen":
                args += ["--module", str(module)]
            with bulk.counting() as c:
                child = run_child(args, env=trl_env(bulk.url) if side == "trl" else child_env())
            answer = child.json()
            if "error" in answer:
                raise RuntimeError(f"dataset {side}: {answer['error']}")
            got[side] = (answer["seconds"], child.max_rss_mb, c["total"], answer["rows"])
        wall.add(got["orlgen"][0], got["trl"][0])
        rss.add(got["orlgen"][1], got["trl"][1])
        reqs.add(got["orlgen"][2], got["trl"][2])
    w, m, r = wall.summary(), rss.summary(), reqs.summary()
    details["build_dataset"] = {"wall": w, "rss": m, "requests": r}
    case = "build_dataset() over all 20,000 tasks (TRL: OpenRewardSpec(url).train_dataset, one list_tasks)"
    rows += [
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
    log("6. orlgen check on the 20,000-task snapshot")
    checks = [run_child([ORLGEN_CLI, "check", str(snapshot)], cwd=out) for _ in range(2)]
    seconds = median([c.seconds for c in checks])
    details["check_20k"] = {
        "seconds": [c.seconds for c in checks],
        "cpu_s": [c.cpu_seconds for c in checks],
        "returncodes": [c.returncode for c in checks],
    }
    rows.append(
        Row(
            "6c",
            "6 Scale of capture",
            "`orlgen check` of the 20,000-task snapshot (2 tools)",
            "wall time",
            "s",
            seconds,
            None,
            "≤ 1 s",
            seconds <= 1.0,
            "load() re-hashes the whole snapshot; plan() calls canonical() and hashes it again",
        )
    )
    return rows, details
