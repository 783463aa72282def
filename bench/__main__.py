"""`python -m bench` (`make bench`): orlgen's generated modules against TRL's runtime binder
(`trl.experimental.openreward.OpenRewardSpec`), on real ORS servers on loopback.

Every server is a child of this process (`orlgen.serve.ServerProcess`, same process group),
serving `bench.served` environments that count the HTTP requests they receive. orlgen and TRL
run against the same server in the same run, in alternating pairs; each row reports the median
of each side and the ratio of medians (orlgen / TRL). Progress goes to stderr, the table to
stdout, everything (samples included) to bench/results.json.

    python -m bench            # the full run, the slow env included
    python -m bench --quick    # fewer repetitions, for trying the bench itself
    python -m bench --slow-env-only --quick   # only the slow-env scenario, shorter delays: < 2 min
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import QUIET_ENV, REPO, Served, servers, versions, write_json
from bench.report import RESULTS, text_table

os.environ.update(QUIET_ENV)  # before anything imports openreward or trl


# Repetitions per scenario: `--quick` for trying the bench itself, the full run for the figures.
QUICK = {
    "start_pairs": 2,
    "import_reps": 3,
    "calls_per_binder": 200,
    "stalled_calls": 50,
    "episode_reps": 1,
    "episodes_per_thread": {1: 15, 8: 4},
    "generate_cli_reps": {5: 1, 30: 1, 100: 1},
    "check_reps": 1,
    "dataset_pairs": 1,
}
FULL = {
    "start_pairs": 3,
    "import_reps": 7,
    "calls_per_binder": 1000,
    "stalled_calls": 150,
    "episode_reps": 3,
    "episodes_per_thread": {1: 40, 8: 10},
    "generate_cli_reps": {5: 1, 30: 3, 100: 1},
    "check_reps": 3,
    "dataset_pairs": 2,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--slow-env-only",
        action="store_true",
        help="run only scenario 8, the slow environment (with --quick: 0.1 s setup, 20 ms tools)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="results JSON (default: bench/results.json)")
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))

    settings = dict(QUICK if args.quick else FULL)
    started = time.perf_counter()
    load_at_start = os.getloadavg()
    details: dict[str, object] = {}
    if args.slow_env_only:
        from bench.scenarios.slow_env import slow_env

        if args.out == RESULTS:  # keep the full run's results
            args.out = RESULTS.with_name("results_slow_env.json")
        with tempfile.TemporaryDirectory(prefix="orlgen-bench-") as tmp:
            rows, details["slow_env"] = slow_env(Path(tmp), args.quick)
    else:
        rows = _full_run(args.quick, settings, details)
    return _report(args, rows, details, settings, started, load_at_start)


def _full_run(quick: bool, settings: dict[str, Any], details: dict[str, object]) -> list[Any]:
    """Every scenario against the three servers; each one's details go into `details`."""
    from bench.common import ORLGEN_CLI, log, run_child
    from bench.scenarios.calls import call_overhead
    from bench.scenarios.episodes import episodes
    from bench.scenarios.generator import generator_speed
    from bench.scenarios.imports import import_cost
    from bench.scenarios.scale import capture, capture_row, scale
    from bench.scenarios.schema_fidelity import fidelity
    from bench.scenarios.slow_env import slow_env
    from bench.scenarios.start import trainer_start
    from bench.synthetic import write_synthetic

    rows: list[Any] = []
    print("orlgen benchmark: starting servers (helpdesk, bulk, helpdesk as orlgen.serve serves it)", file=sys.stderr)
    with (
        tempfile.TemporaryDirectory(prefix="orlgen-bench-") as tmp,
        servers(Served("bench.served:Helpdesk"), Served("bench.served:Bulk"), Served("bench.stalled:Helpdesk")) as (
            helpdesk,
            bulk,
            stalled,
        ),
    ):
        out = Path(tmp)
        log("capturing the bulk env: default sample, and --tasks all")
        default_capture = capture(bulk, out, "bulk", [])
        everything = out / "all"  # orlgen keeps one module per env in a directory
        everything.mkdir()
        all_capture = capture(bulk, everything, "bulk_all", ["--tasks", "all"])
        synthetic = {n: write_synthetic(n, out) for n in (5, 30, 100)}
        run_child([ORLGEN_CLI, "generate", str(synthetic[100])], cwd=out)

        for name, run in (
            ("import", lambda: import_cost(settings["import_reps"], out / "synthetic_100.py")),
            (
                "start",
                lambda: trainer_start(
                    helpdesk, bulk, out / "bulk.py", everything / "bulk_all.py", settings["start_pairs"]
                ),
            ),
            (
                "calls",
                lambda: call_overhead(helpdesk, stalled, settings["calls_per_binder"], settings["stalled_calls"]),
            ),
            (
                "episodes",
                lambda: episodes(helpdesk, settings["episode_reps"], settings["episodes_per_thread"]),
            ),
            (
                "generator",
                lambda: generator_speed(synthetic, settings["generate_cli_reps"], settings["check_reps"]),
            ),
            ("scale", lambda: scale(bulk, everything, all_capture, settings["dataset_pairs"])),
            ("fidelity", fidelity),
            ("slow_env", lambda: slow_env(out, quick)),
        ):
            got, info = run()
            rows += got
            details[name] = info
        rows.append(capture_row(*default_capture))
    return rows


def _report(
    args: argparse.Namespace,
    rows: list,
    details: dict[str, object],
    settings: dict[str, object],
    started: float,
    load_at_start: tuple[float, float, float],
) -> int:
    """Print the table and the missed targets; write everything to `args.out`."""
    order = ["1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "8 "]
    rows.sort(key=lambda row: next(i for i, prefix in enumerate(order) if row.scenario.startswith(prefix)))
    table = [row.to_json() for row in rows]
    print(text_table(table))
    missed = [f"{row['id']} {row['metric']} ({row['case']}): {row['target']}" for row in table if row["met"] is False]
    elapsed = time.perf_counter() - started
    print(f"\n{len(missed)} target(s) missed" + (":\n  " + "\n  ".join(missed) if missed else "."))
    print(
        f"bench ran in {elapsed:.0f} s (load average {load_at_start[0]:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs); results in {args.out}"
    )
    write_json(
        args.out,
        {
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "elapsed_s": elapsed,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "loadavg_at_start": load_at_start,
                "loadavg_at_end": os.getloadavg(),
            },
            "versions": versions(),
            "settings": {
                k: {str(a): b for a, b in v.items()} if isinstance(v, dict) else v for k, v in settings.items()
            },
            "rows": table,
            "missed": missed,
            "details": details,
        },
        default=str,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
