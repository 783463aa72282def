"""CPU seconds of orlgen's offline commands and of a large capture: `python -m bench.commands`.

Each case runs the installed `orlgen` CLI in a fresh child process and counts the CPU seconds
(user + system, from `os.wait4`) of the command and every child it waited for (the verifier),
not the wall time: the machine is shared and noisy, CPU time much less so. A row is the median
of `--reps` runs. The cases:

- `check` of one directory holding a 20,000-task snapshot (captured from `bench.served:Bulk`
  with `--tasks all`) and its module;
- `check` on the repository's `generated/`;
- `generate` of a directory of 10 snapshots of 10 tools each (helpdesk's schemas, 100 tools)
  after one tool's description changed in one snapshot;
- `snapshot URL --tasks all` of the 20,000-task env (the server's CPU is not counted).

`--out FILE` writes the rows as JSON; `--docs BEFORE.json AFTER.json` rewrites the table of
docs/benchmarks.md's "Command CPU seconds" section from two such files (the checked-in
`bench/commands-<commit>.json`), so the page shows only what a run printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO, Served, child_env, servers

# `python -m orlgen`: the orlgen of this interpreter, or of the working directory's tree
ORLGEN = [sys.executable, "-m", "orlgen"]
DOCS = REPO / "docs" / "benchmarks.md"
START, END = "<!-- bench.commands table: start -->", "<!-- bench.commands table: end -->"

# case → (label, target CPU seconds or None)
CASES: dict[str, tuple[str, float | None]] = {
    "check_20k": ("`orlgen check` of a 20,000-task snapshot", 0.6),
    "check_generated": ("`orlgen check` on `generated/`", 0.6),
    "check_generated_no_cache": ("`orlgen check --no-cache` on `generated/`", None),
    "generate_one_changed": ("`orlgen generate`, 10 × 10 tools, one tool changed", 0.7),
    "snapshot_20k": ("`orlgen snapshot URL --tasks all`, 20,000 tasks", None),
}


def cpu_seconds(argv: Sequence[str], cwd: Path, cache: Path) -> float:
    """User + system CPU seconds of `argv` and the children it waited for; raises if it failed.
    The verdict cache lives in `cache` (the run's own, warmed by each case's first run)."""
    env = child_env(XDG_CACHE_HOME=str(cache))
    child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0,):
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}: {err[-600:]}")
    return usage.ru_utime + usage.ru_stime


def median_of(reps: int, run: Callable[[], float]) -> dict[str, Any]:
    samples = [run() for _ in range(reps)]
    return {"median": statistics.median(samples), "samples": samples}


def _synthetic_directory(directory: Path, modules: int, tools: int) -> list[Path]:
    """`modules` snapshots of `tools` tools each (bench.synthetic), written as the CLI would."""
    from bench.synthetic import synthetic_snapshot

    directory.mkdir()
    paths = []
    for i in range(modules):
        snapshot = synthetic_snapshot(tools).model_copy(update={"name": f"synthetic_{i:02d}"}).canonical()
        paths.append(write_snapshot(snapshot, directory))
    return paths


def write_snapshot(snapshot: Any, directory: Path) -> Path:
    """Write a snapshot's file(s) into `directory`; its interface file's path."""
    path = directory / snapshot.file_name
    for file, data in snapshot.files(path).items():
        file.write_bytes(data)
    return path


def _retouch(path: Path, round_: int) -> None:
    """Change one tool's description in the snapshot at `path` (another text each round)."""
    from orlgen.snapshot.model import load

    snapshot = load(path)
    first, *rest = snapshot.tools
    changed = first.model_copy(update={"description": f"{first.description.split(' [')[0]} [round {round_}]"})
    write_snapshot(snapshot.model_copy(update={"tools": [changed, *rest]}).canonical(), path.parent)


def run(reps: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="orlgen-bench-commands-") as tmp,
        tempfile.TemporaryDirectory(prefix="orlgen-bench-cache-") as cache_home,
    ):
        root = Path(tmp)
        cache = Path(cache_home)  # outside the project: a cache inside it is never used

        def command(*args: str, cwd: Path = root) -> Callable[[], float]:
            return lambda: cpu_seconds([*ORLGEN, *args], cwd, cache)

        command("check", "generated", cwd=REPO)()  # warms the cache, as a first run does
        results["check_generated"] = median_of(reps, command("check", "generated", cwd=REPO))
        results["check_generated_no_cache"] = median_of(reps, command("check", "--no-cache", "generated", cwd=REPO))
        synthetic = _synthetic_directory(root / "synthetic", 10, 10)
        command("generate", "synthetic")()
        rounds = iter(range(1, 1000))

        def one_changed() -> float:
            _retouch(synthetic[3], next(rounds))
            return command("generate", "synthetic")()

        results["generate_one_changed"] = median_of(reps, one_changed)
        with servers(Served("bench.served:Bulk")) as (bulk,):
            results["snapshot_20k"] = median_of(
                reps, command("snapshot", bulk.url, "--name", "bulk", "--tasks", "all", "--out", "bulk")
            )
        command("check", "bulk")()
        results["check_20k"] = median_of(reps, command("check", "bulk"))
    return results


def rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"case": case, "label": label, "target": target, **results[case]}
        for case, (label, target) in CASES.items()
        if case in results
    ]


def docs_section(text: str, before: dict[str, Any], after: dict[str, Any]) -> str:
    """`text` (docs/benchmarks.md) with the table between the markers replaced."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{docs_table(before, after)}\n{END}{tail}"


def docs_table(before: dict[str, Any], after: dict[str, Any]) -> str:
    """docs/benchmarks.md's table: before and after, CPU seconds, with each target's verdict."""
    lines = [
        f"| case | before ({before['commit']}) | after ({after['commit']}) | target | |",
        "|---|---|---|---|---|",
    ]
    medians = f"CPU seconds, median of {before['reps']} (before) and {after['reps']} (after) runs"
    old = {row["case"]: row for row in before["rows"]}
    for row in after["rows"]:
        target = row["target"]
        verdict = "" if target is None else ("met" if row["median"] <= target else "**MISSED**")
        was = old.get(row["case"])
        lines.append(
            f"| {row['label']} | {_seconds(was['median']) if was else '—'} | {_seconds(row['median'])} | "
            f"{'—' if target is None else f'≤ {target:.1f} s'} | {verdict} |"
        )
    files = f"bench/commands-{before['commit']}.json and bench/commands-{after['commit']}.json"
    return "\n".join([*lines, "", f"{medians}; every sample is in {files}."])


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return found.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.commands", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="runs per case (the median is reported)")
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    parser.add_argument("--docs", nargs=2, type=Path, metavar=("BEFORE", "AFTER"), help="print the docs table")
    args = parser.parse_args(argv)
    if args.docs:
        before, after = (json.loads(path.read_text(encoding="utf-8")) for path in args.docs)
        DOCS.write_text(docs_section(DOCS.read_text(encoding="utf-8"), before, after), encoding="utf-8")
        print(docs_table(before, after))
        return 0
    found = {"commit": _commit(), "reps": args.reps, "loadavg": os.getloadavg(), "rows": rows(run(args.reps))}
    for row in found["rows"]:
        print(f"{row['label']}: {_seconds(row['median'])} CPU (samples {', '.join(map(_seconds, row['samples']))})")
    if args.out:
        args.out.write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
