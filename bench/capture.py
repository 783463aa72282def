"""`python -m bench.capture [--reps N]`: what `orlgen snapshot URL --tasks all` costs on the
20,000-task env (`bench.bulk_env.Bulk`, served by `bench.served`, which counts requests).

Each repetition captures into a fresh directory (no verdict cache, as a first capture has none)
and reports, as JSON on stdout: the requests the server received (total, TCP connections, by
path), the wall time, the CPU seconds of the command and the children it waited for, and the
wall above that CPU (`wait`: server work and anything the command waits for). The server's own
CPU is not counted. One warm-up capture first, so the server's task list is built.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import ORLGEN_CLI, child_env, child_environ

TARGET_REQUESTS = 50
TARGET_WAIT_S = 1.5


def _bench(url: str, path: str, post: bool = False) -> Any:
    request = urllib.request.Request(url + path, data=b"" if post else None, method="POST" if post else "GET")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def capture_once(url: str, out: Path) -> dict[str, Any]:
    """One `orlgen snapshot` of the bulk env into `out`: requests, wall, CPU, wait."""
    _bench(url, "/__bench__/reset", post=True)
    argv = [ORLGEN_CLI, "snapshot", url, "--name", "bulk", "--tasks", "all", "--out", str(out)]
    started = time.monotonic()
    child = subprocess.Popen(argv, env=child_env(XDG_CACHE_HOME=str(out.parent / "cache")), stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed")
    cpu = usage.ru_utime + usage.ru_stime
    counts = _bench(url, "/__bench__/requests")
    return {
        "requests": counts["total"],
        "connections": counts["connections"],
        "by_path": counts["by_path"],
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "wait_s": round(wall - cpu, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.capture", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    reps = parser.parse_args(argv).reps
    from orlgen.serve import ServerProcess

    with child_environ(), ServerProcess("bench.served:Bulk") as server, tempfile.TemporaryDirectory() as tmp:
        capture_once(server.url, Path(tmp) / "warm" / "out")
        runs = [capture_once(server.url, Path(tmp) / f"run{i}" / "out") for i in range(reps)]
    summary = {
        "requests": runs[-1]["requests"],
        "connections": runs[-1]["connections"],
        "by_path": runs[-1]["by_path"],
        "median_wall_s": statistics.median(run["wall_s"] for run in runs),
        "median_cpu_s": statistics.median(run["cpu_s"] for run in runs),
        "median_wait_s": statistics.median(run["wait_s"] for run in runs),
        "targets": {"requests": TARGET_REQUESTS, "wait_s": TARGET_WAIT_S},
        "load_average": os.getloadavg()[0],
        "runs": runs,
    }
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
