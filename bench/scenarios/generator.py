"""Scenario 5: `orlgen generate` and `orlgen check` speed, and TRL's binding of the same tools."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench.common import ORLGEN_CLI, PY, REPO, log, median, run_child
from bench.importtime import importtime_top
from bench.scenarios.base import Row
from bench.trl_side import environment_module, listed, rollout_class

SCENARIO = "5 Generator"


def generator_speed(
    snapshots: dict[int, Path], cli_reps: dict[int, int], check_reps: int
) -> tuple[list[Row], dict[str, Any]]:
    rows: list[Row] = []
    details: dict[str, Any] = {}
    for tools, path in snapshots.items():
        log(f"5. generator: {tools} tools")
        row, details[tools] = _generate(tools, path, cli_reps.get(tools, 1))
        rows.append(row)
    log("5. orlgen check on generated/")
    row, details["check"] = _check(check_reps)
    rows.append(row)
    return rows, details


def _generate(tools: int, path: Path, reps: int) -> tuple[Row, dict[str, Any]]:
    """`orlgen generate` of one synthetic snapshot, render_module alone, TRL's binding."""
    from orlgen.snapshot.model import load

    snapshot = load(path)
    rendered = run_child([PY, "-m", "bench.worker", "render", str(path), "--reps", "3" if tools < 100 else "2"]).json()
    if "error" in rendered:
        raise RuntimeError(f"render {tools} tools: {rendered['error']}")
    warm = rendered["render_s"]
    cli: list[float] = []
    cli_cpu: list[float] = []
    for _ in range(reps):
        path.with_name(f"{path.name.removesuffix('.snapshot.json')}.py").unlink(missing_ok=True)
        run = run_child([ORLGEN_CLI, "generate", str(path)], cwd=path.parent)
        if run.returncode:
            raise RuntimeError(f"orlgen generate failed: {run.stderr[-500:]}")
        cli.append(run.seconds)
        cli_cpu.append(run.cpu_seconds)
    binds = _trl_bind_seconds(snapshot)
    target = tools == 30
    row = Row(
        "5",
        SCENARIO,
        f"`orlgen generate`, {tools} tools (helpdesk schemas), CLI process",
        "wall time",
        "s",
        median(cli),
        None,
        "≤ 1.5 s" if target else "",
        (median(cli) <= 1.5) if target else None,
        f"CPU {median(cli_cpu):.2f} s; render_module alone (warm, fresh process) {median(warm):.2f} s; "
        f"TRL binds the same tools "
        f"at every trainer start in {median(binds) * 1e3:.1f} ms (exec, no schema fidelity)",
    )
    return row, {"render_warm_s": warm, "cli_generate_s": cli, "cli_cpu_s": cli_cpu, "trl_bind_s": binds}


def _trl_bind_seconds(snapshot: Any, reps: int = 5) -> list[float]:
    """Seconds TRL's binder takes for the snapshot's tools on a fresh class, `reps` times."""
    trl = environment_module()
    seconds = []
    for _ in range(reps):
        cls = rollout_class("BenchBind")
        started = time.perf_counter()
        for tool in snapshot.tools:
            trl._bind_tool_method(cls, listed(tool.name, tool.description, tool.input_schema))
        seconds.append(time.perf_counter() - started)
    return seconds


def _check(reps: int) -> tuple[Row, dict[str, Any]]:
    """`orlgen check` on generated/, and what its imports alone cost."""
    checks = [run_child([ORLGEN_CLI, "check", "--no-cache"], cwd=REPO) for _ in range(reps)]
    imports = run_child(
        [PY, "-X", "importtime", "-c", "import orlgen.cli, orlgen.review.check, datamodel_code_generator, black"],
        cwd=REPO,
    )
    top = importtime_top(imports.stderr)
    import_s = (
        sum(
            us
            for name, (_, us) in top.items()
            if name.split(".")[0] in ("orlgen", "datamodel_code_generator", "black", "click")
        )
        / 1e6
    )
    seconds = median([c.seconds for c in checks])
    codes = sorted({c.returncode for c in checks})
    cpu = median([c.cpu_seconds for c in checks])
    details = {
        "seconds": [c.seconds for c in checks],
        "cpu_s": [c.cpu_seconds for c in checks],
        "returncodes": codes,
        "stdout": checks[-1].stdout[-1000:],
        "import_s": import_s,
    }
    n_modules = len(list((REPO / "generated").glob("*.py")))
    row = Row(
        "5",
        SCENARIO,
        f"`orlgen check` on generated/ ({n_modules} modules), CLI process",
        "wall time",
        "s",
        seconds,
        None,
        "≤ 1 s",
        seconds <= 1.0,
        f"exit {','.join(map(str, codes))}; CPU {cpu:.2f} s; imports alone {import_s:.2f} s (black, datamodel-code-generator,"
        " pydantic); then every module is re-rendered (dcg + black)",
    )
    return row, details
