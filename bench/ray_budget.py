"""`python -m bench.ray_budget [--rollouts 64] [--reps N] [--lease N] [--setup NAME] [--beat-s S]
[--out FILE]`: the session budget on a two-node Ray cluster (`orlgen.runtime.session.cluster`,
53bfa80), against an env that allows 4 open sessions.

The env is the both-env (`tests/support/envs/both.py`) on the openreward SDK's server wearing the
capacity middleware of `tests/support/servers/capacity.py` (`python -m tests.support.servers.capacity`:
past 4 open sessions `/create` answers 429 with `Retry-After: 1`; `GET /_stats` counts what it
refused and the most ever open), on loopback. Its TRL module is generated into a temp dir
(`orlgen.capture.live.capture` + `orlgen.render.jobs.generate`). Each run is a child in the Ray
venv (`tests/support/framework_venvs.py`'s `ray_python()`), `bench/ray_budget_child.py` run by
path: a fresh `ray.cluster_utils.Cluster` of two nodes, a worker actor pinned to each, ROLLOUTS
rollouts (`reset`, `wait(0.5)` holding the session, `submit`, `get_reward`), half per worker, all
at once. The floor is ROLLOUTS × 0.5 s ÷ 4. Setups (`--setup`), each from fresh server counts:

- `cluster, cap 4`: the cluster-wide budget with ORLGEN_MAX_SESSIONS=4 (the cluster's cap);
- `cluster, learned`: the cluster-wide budget, no cap: the capacity learned from the 429s;
- `per-process, cap 4`: each worker process its own budget, the pre-change behaviour (the child
  sets `cluster.in_ray = lambda: False` in each worker before its first rollout: a measurement
  switch). No process group and WORLD_SIZE unset: each process takes the whole 4, as it does.

Per run: wall (dispatch to the last reward, in the driver), wall ÷ floor, when each worker's last
rollout ended, the creates the env refused and the asks refused (sessions refused at least once),
the most sessions open at once, rollouts scored (reward 1.0), a rollout's median time once its
session opened (the hold, `submit`, `get_reward`), and the runtime's round trips to the `Tally`
actor per rollout (`RayCounts.add`, `swap` and, since 5155923, `news_of_death` calls, counted in
each worker). And, in the first cluster run's cluster, the lease cost from inside a Ray worker on
each node (n = --lease each, median and p90): `Budget.acquire` + `release` through the env's
`Tally` actor, a slot's whole accounting (`acquire` + `opened` + `closed`), one bare `Tally.add`
round trip, and acquire + release on a process-local budget. `--beat-s` sets each worker's lease report period
(`cluster.BEAT_S`, 2 s as shipped): a measurement switch.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import QUIET_ENV, REPO, child_environ, log, median, run_record, write_json

CAPACITY, HOLD_S, ROLLOUTS, LEASE_N = 4, 0.5, 64, 300
CHILD = REPO / "bench" / "ray_budget_child.py"
SETUPS = {  # label → (the child's mode, ORLGEN_MAX_SESSIONS or None)
    "cluster, cap 4": ("cluster", str(CAPACITY)),
    "cluster, learned": ("cluster", None),
    "per-process, cap 4": ("per-process", str(CAPACITY)),
}


def generated_both(out: Path) -> Path:
    """The both-env captured in-process and its TRL module generated into `out` (`both.py`)."""
    from orlgen.capture.live import capture
    from orlgen.render.jobs import generate
    from orlgen.review.files import write_files

    snapshot = capture("tests.support.envs.both:Both")
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)], trainers={snapshot.name: ("trl",)}))
    if not (out / "both.py").exists():
        raise RuntimeError(f"no both.py generated in {out}")
    return out


def run_once(
    python: Path, url: str, module_dir: Path, setup: str, rollouts: int, lease: int, beat_s: float | None = None
) -> dict[str, Any]:
    """One setup on a fresh cluster, from fresh server counts: the child's report and the
    server's counts."""
    from tests.support.servers.capacity import post, stats

    mode, cap = SETUPS[setup]
    post(url, "/_fault/clear")
    post(url, f"/_fault/capacity?n={CAPACITY}&retry_after=1")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORLGEN_", "RAY_", "PYTHON"))}
    env.update(QUIET_ENV, PYTHONPATH=str(REPO))
    if cap is not None:
        env["ORLGEN_MAX_SESSIONS"] = cap
    args = [str(python), str(CHILD), mode, url, str(module_dir), str(rollouts), str(HOLD_S), str(lease)]
    args += [] if beat_s is None else [str(beat_s)]
    done = subprocess.run(args, cwd=module_dir, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{setup}: the Ray child failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{setup}: no report from the Ray child:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    report = json.loads(lines[-1])
    report["server"] = stats(url)
    return report


def summarise(report: dict[str, Any], rollouts: int) -> dict[str, Any]:
    played = [r for worker in report["rollouts"] for r in worker]
    floor = rollouts * HOLD_S / CAPACITY
    server = report["server"]
    return {
        "wall_s": report["wall_s"],
        "floor_s": floor,
        "wall_over_floor": report["wall_s"] / floor,
        "refused": server["refused"],
        "refused_asks": server["refused_asks"],
        "max_open": server["max_open"],
        "created": server["created"],
        "deleted": server["deleted"],
        "scored": sum(r["reward"] == 1.0 for r in played),
        "rollouts": len(played),
        "median_rollout_s": median([r["seconds"] for r in played]),
        # a rollout's time once its session opened: the hold, `submit`, `get_reward` (the delete)
        "median_after_open_s": median([r["seconds"] - r["reset_s"] for r in played]),
        "workers_done_s": [max(r["seconds"] for r in worker) for worker in report["rollouts"]],
        "round_trips_per_rollout": sum(report["round_trips"]) / len(played),
        "budget": report["budget"],
        "budgets": report["budgets"],
        "cluster_up_s": report["up_s"],
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def lease_table(lease: list[dict[str, list[float]]], workers: list[dict[str, Any]]) -> str:
    lines = [
        "| operation | worker | n | median | p90 |",
        "|---|---|---:|---:|---:|",
    ]
    for times, worker, where in zip(lease, workers, ("head node", "second node"), strict=True):
        for name, samples in times.items():
            lines.append(
                f"| {name} | {where} (pid {worker['pid']}) | {len(samples)} "
                f"| {median(samples) * 1e6:.0f} µs | {percentile(samples, 0.9) * 1e6:.0f} µs |"
            )
    return "\n".join(lines)


def runs_table(results: dict[str, list[dict[str, Any]]], rollouts: int) -> str:
    lines = [
        f"| setup ({rollouts} rollouts, 2 nodes, env capacity {CAPACITY}, hold {HOLD_S:g} s) | run | wall "
        "| wall ÷ floor | each worker done | refused creates (asks) | most open | scored "
        "| rollout once open (median) | actor round trips / rollout |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for setup, runs in results.items():
        for i, s in enumerate(runs, 1):
            done = " / ".join(f"{t:.1f}" for t in s["workers_done_s"])
            lines.append(
                f"| {setup} | {i} | {s['wall_s']:.2f} s | {s['wall_over_floor']:.2f} | {done} s "
                f"| {s['refused']} ({s['refused_asks']}) | {s['max_open']} | {s['scored']}/{s['rollouts']} "
                f"| {s['median_after_open_s']:.2f} s | {s['round_trips_per_rollout']:.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ray_budget", description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=ROLLOUTS, help=f"rollouts per run (default {ROLLOUTS})")
    parser.add_argument("--reps", type=int, default=1, help="runs of each setup, each on a fresh cluster")
    parser.add_argument("--lease", type=int, default=LEASE_N, help=f"lease samples per worker (default {LEASE_N})")
    parser.add_argument(
        "--setup", action="append", choices=list(SETUPS), help="measure only this setup (repeatable; default: all)"
    )
    parser.add_argument(
        "--beat-s",
        type=float,
        help="measurement switch: each worker's lease report period (cluster.BEAT_S, 2 s as shipped)",
    )
    parser.add_argument("--out", type=Path, help="also write the results (samples included) as JSON here")
    args = parser.parse_args(argv)
    chosen = args.setup or list(SETUPS)
    from orlgen.serve import ServerProcess

    from tests.support.framework_venvs import ray_python

    started, load_at_start = time.perf_counter(), os.getloadavg()
    python = ray_python()
    results: dict[str, list[dict[str, Any]]] = {setup: [] for setup in chosen}
    raw: dict[str, list[dict[str, Any]]] = {setup: [] for setup in chosen}
    lease: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="orlgen-ray-budget-") as tmp:
        module_dir = generated_both(Path(tmp))
        with (
            child_environ(),
            ServerProcess(
                "tests.support.envs.both:Both", entry="tests.support.servers.capacity", startup_timeout=120
            ) as server,
        ):
            for rep in range(args.reps):
                for setup in chosen:
                    lease_n = args.lease if rep == 0 and not lease and SETUPS[setup][0] == "cluster" else 0
                    report = run_once(python, server.url, module_dir, setup, args.rollouts, lease_n, args.beat_s)
                    if "lease" in report:
                        lease = {"workers": report["workers"], "times": report["lease"]}
                    raw[setup].append(report)
                    results[setup].append(s := summarise(report, args.rollouts))
                    errors = [r["error"] for worker in report["rollouts"] for r in worker if r.get("error")]
                    if errors:
                        log(f"{setup} #{rep + 1}: {len(errors)} rollouts failed, the first: {errors[0]}")
                    log(
                        f"{setup} #{rep + 1}: {s['wall_s']:.2f} s ({s['wall_over_floor']:.2f}x floor), refused "
                        f"{s['refused']} ({s['refused_asks']} asks), most open {s['max_open']}, "
                        f"scored {s['scored']}/{s['rollouts']}; cluster up in {s['cluster_up_s']:.0f} s"
                    )
    elapsed = time.perf_counter() - started
    if lease:
        print(lease_table(lease["times"], lease["workers"]))
        print()
    print(runs_table(results, args.rollouts))
    print(
        f"\n{elapsed:.0f} s in all (load average {load_at_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} "
        f"at the end, {os.cpu_count()} CPUs)"
    )
    if args.out:
        write_json(
            args.out,
            {
                **run_record(elapsed, load_at_start),
                "rollouts": args.rollouts,
                "hold_s": HOLD_S,
                "capacity": CAPACITY,
                "beat_s": args.beat_s,
                "lease": lease,
                "summary": results,
                "reports": raw,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
