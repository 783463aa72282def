"""Scenario 5: `orlgen generate` and `orlgen check` speed, and TRL's binding of the same tools."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

from bench.common import (
    PY,
    REPO,
    median,
    run_child,
)
from bench.importtime import _importtime_top
from bench.scenarios.base import ORLGEN_CLI, Row, log


def generator_speed(
    snapshots: dict[int, Path], cli_reps: dict[int, int], check_reps: int
) -> tuple[list[Row], dict[str, Any]]:
    from orlgen.snapshot import load

    rows: list[Row] = []
    details: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from trl.experimental.openreward import environment as trl_env_module
    for tools, path in snapshots.items():
        log(f"5. generator: {tools} tools")
        snapshot = load(path)
        rendered = run_child(
            [PY, "-m", "bench.worker", "render", str(path), "--reps", "3" if tools < 100 else "2"]
        ).json()
        if "error" in rendered:
            raise RuntimeError(f"render {tools} tools: {rendered['error']}")
        warm = rendered["render_s"]
        cli: list[float] = []
        cli_cpu: list[float] = []
        for _ in range(cli_reps.get(tools, 1)):
            path.with_name(f"{path.name.removesuffix('.snapshot.json')}.py").unlink(missing_ok=True)
            run = run_child([ORLGEN_CLI, "generate", str(path)], cwd=path.parent)
            if run.returncode:
                raise RuntimeError(f"orlgen generate failed: {run.stderr[-500:]}")
            cli.append(run.seconds)
            cli_cpu.append(run.cpu_seconds)
        binds = []
        for _ in range(5):
            cls = type("BenchBind", (trl_env_module._RolloutEnvironment,), {})
            started = time.perf_counter()
            for tool in snapshot.tools:
                trl_env_module._bind_tool_method(
                    cls, {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema or {}}
                )
            binds.append(time.perf_counter() - started)
        details[tools] = {"render_warm_s": warm, "cli_generate_s": cli, "cli_cpu_s": cli_cpu, "trl_bind_s": binds}
        target = tools == 30
        rows.append(
            Row(
                "5",
                "5 Generator",
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
        )
    log("5. orlgen check on generated/")
    checks = [run_child([ORLGEN_CLI, "check"], cwd=REPO) for _ in range(check_reps)]
    imports = run_child(
        [PY, "-X", "importtime", "-c", "import orlgen.cli, orlgen.check, datamodel_code_generator, black"], cwd=REPO
    )
    top = _importtime_top(imports.stderr)
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
    details["check"] = {
        "seconds": [c.seconds for c in checks],
        "cpu_s": [c.cpu_seconds for c in checks],
        "returncodes": codes,
        "stdout": checks[-1].stdout[-1000:],
        "import_s": import_s,
    }
    n_modules = len(list((REPO / "generated").glob("*.py")))
    rows.append(
        Row(
            "5",
            "5 Generator",
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
    )
    return rows, details
