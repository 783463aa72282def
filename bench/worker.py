"""What the benchmark runs in fresh interpreters; each command prints one JSON line.

    python -m bench.worker start orlgen URL --module PATH --tasks 64 --instances 8
    python -m bench.worker start trl URL --tasks 64 --instances 8 [--no-metadata]
    python -m bench.worker dataset orlgen URL --module PATH      (every task of the split)
    python -m bench.worker dataset trl URL
    python -m bench.worker render SNAPSHOT --reps 3     (render_module, after one warm-up render)

`start` times, inside the child, from the `import` of the adapter module (orlgen's generated
module, TRL's `trl.experimental.openreward`) to a dataset of `--tasks` tasks plus `--instances`
constructed adapter instances. `--preimport datasets` imports modules before the clock starts,
as a training script that already did `from trl import GRPOTrainer` has.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.loading import load_module


def _load(path: str) -> Any:
    file = Path(path).resolve()
    return load_module(file, file.stem)


def _tools(instance: Any) -> list[str]:
    """TRL's rule: public functions of the class, but reset/get_reward; keyed by __name__."""
    return sorted(
        fn.__name__
        for name, fn in inspect.getmembers(type(instance), inspect.isfunction)
        if not name.startswith("_") and name not in ("reset", "get_reward")
    )


def start(args: argparse.Namespace) -> dict[str, Any]:
    for name in args.preimport:
        importlib.import_module(name)
    had_openreward = "openreward" in sys.modules
    started = time.perf_counter()
    if args.side == "orlgen":
        module = _load(args.module)
        imported = time.perf_counter()
        dataset = module.build_dataset(args.split, num_tasks=args.tasks, base_url=args.url)
        built = time.perf_counter()
        instances = [module.environment_factory(base_url=args.url) for _ in range(args.instances)]
    else:
        from trl.experimental.openreward import OpenRewardSpec

        spec = OpenRewardSpec(args.url, num_tasks=args.tasks, split=args.split, include_metadata=args.metadata)
        imported = time.perf_counter()
        dataset = spec.train_dataset
        built = time.perf_counter()
        instances = [spec.environment_factory() for _ in range(args.instances)]
    seconds = time.perf_counter() - started
    phases = {"import": imported - started, "dataset": built - imported, "instances": started + seconds - built}
    return {
        "seconds": seconds,
        "phases": phases,
        "rows": len(dataset),
        "columns": list(dataset.column_names),
        "instances": len(instances),
        "tools": _tools(instances[0]),
        "imported_openreward": not had_openreward and "openreward" in sys.modules,
    }


def dataset(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    if args.side == "orlgen":
        module = _load(args.module)
        built = module.build_dataset(args.split, base_url=args.url)
    else:
        from trl.experimental.openreward import OpenRewardSpec

        built = OpenRewardSpec(args.url, split=args.split).train_dataset
    return {
        "seconds": time.perf_counter() - started,
        "rows": len(built),
        "columns": len(built.column_names),
        "imported_openreward": "openreward" in sys.modules,
    }


def render(args: argparse.Namespace) -> dict[str, Any]:
    """`orlgen.render.jobs.render_module` timed in a clean process, after a warm-up render (imports,
    template compilation); `load` timed too."""
    from orlgen.render.jobs import render_module
    from orlgen.snapshot.model import load

    started = time.perf_counter()
    snapshot = load(Path(args.snapshot))
    load_s = time.perf_counter() - started
    render_module(snapshot)
    times = []
    for _ in range(args.reps):
        started = time.perf_counter()
        render_module(snapshot)
        times.append(time.perf_counter() - started)
    return {"render_s": times, "load_s": load_s}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "dataset"):
        command = sub.add_parser(name)
        command.add_argument("side", choices=("orlgen", "trl"))
        command.add_argument("url")
        command.add_argument("--module", help="the generated module's file (orlgen)")
        command.add_argument("--split", default="train")
        if name == "start":
            command.add_argument("--tasks", type=int, default=64)
            command.add_argument("--instances", type=int, default=8)
            command.add_argument(
                "--no-metadata", dest="metadata", action="store_false", help="TRL: include_metadata=False"
            )
            command.add_argument("--preimport", action="append", default=[])
    command = sub.add_parser("render")
    command.add_argument("snapshot")
    command.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    try:
        answer = {"start": start, "dataset": dataset, "render": render}[args.command](args)
    except Exception as exc:  # reported as the run's outcome
        answer = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    print(json.dumps(answer), flush=True)
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (SDK loop shutdown): measured time ended above


if __name__ == "__main__":
    main()
