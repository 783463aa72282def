"""Scenario 2: the import cost of a generated module, and the heavy packages it imports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import PY, Paired, child_env, log, median, run_child
from bench.importtime import importtime_children, importtime_top
from bench.scenarios.base import Row

_HEAVY = (
    "openreward",
    "datasets",
    "trl",
    "transformers",
    "torch",
    "aiohttp",
    "black",
    "datamodel_code_generator",
    "jinja2",
)


def _wall_times(statements: dict[str, str], reps: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Wall time of `python -c STATEMENT` per statement, `reps` rounds (the order flips every
    round), after one warm-up round (page cache, .pyc files)."""
    times: dict[str, list[float]] = {key: [] for key in statements}
    for key in statements:  # warm the page cache and .pyc files
        run_child([PY, "-c", statements[key]], env=env)
    for i in range(reps):
        keys = list(statements) if i % 2 == 0 else list(reversed(statements))
        for key in keys:
            run = run_child([PY, "-c", statements[key]], env=env)
            if run.returncode:
                raise RuntimeError(f"import {key} failed: {run.stderr[-500:]}")
            times[key].append(run.seconds)
    return times


def _heavy_imported(env: dict[str, str]) -> list[str]:
    """The heavy packages in `sys.modules` after `import generated.helpdesk`."""
    probe = run_child(
        [
            PY,
            "-c",
            "import generated.helpdesk, sys, json; "
            f"print(json.dumps(sorted(m for m in {_HEAVY!r} if m in sys.modules)))",
        ],
        env=env,
    )
    return probe.json()


def import_cost(reps: int, synthetic_100: Path) -> tuple[list[Row], dict[str, Any]]:
    log("2. import cost")
    env = child_env()
    statements = {
        "bare": "pass",
        "orlgen": "import generated.helpdesk",
        "trl": "from trl.experimental.openreward import OpenRewardSpec",
        "orlgen_100": f"import importlib.util as u; s = u.spec_from_file_location('synthetic_100', {str(synthetic_100)!r}); "
        "m = u.module_from_spec(s); import sys; sys.modules['synthetic_100'] = m; s.loader.exec_module(m)",
    }
    times = _wall_times(statements, reps, env)
    bare = median(times["bare"])
    cost = {key: median(values) - bare for key, values in times.items()}
    pair = Paired(
        [o - b for o, b in zip(times["orlgen"], times["bare"], strict=False)],
        [t - b for t, b in zip(times["trl"], times["bare"], strict=False)],
    )
    heavy = _heavy_imported(env)
    timing = run_child([PY, "-X", "importtime", "-c", "import generated.helpdesk"], env=env)
    top = importtime_top(timing.stderr)
    own_self, own = (us / 1e6 for us in top.get("generated.helpdesk", (0, 0)))
    children = importtime_children(timing.stderr, "generated.helpdesk")
    rows = [
        Row(
            "2",
            "2 Import cost",
            "`import generated.helpdesk`, fresh interpreter, minus bare start",
            "import time",
            "ms",
            cost["orlgen"] * 1e3,
            cost["trl"] * 1e3,
            "≤ 300 ms",
            cost["orlgen"] <= 0.300,
            f"TRL column: `from trl.experimental.openreward import OpenRewardSpec`. -X importtime cumulative "
            f"{own * 1e3:.0f} ms: the module body (pydantic model classes) {own_self * 1e3:.0f} ms, "
            + ", ".join(
                f"{name} {us / 1e3:.0f} ms" for name, us in sorted(children.items(), key=lambda kv: -kv[1])[:4]
            ),
            samples=pair.summary(),
        ),
        Row(
            "2",
            "2 Import cost",
            "heavy packages imported by `import generated.helpdesk`",
            "count",
            "",
            float(len(heavy)),
            None,
            "no `openreward`",
            "openreward" not in heavy,
            "imported: " + (", ".join(heavy) or "none of " + ", ".join(_HEAVY)),
        ),
        Row(
            "2b",
            "2 Import cost",
            "a generated module with 100 tools (synthetic), orlgen only",
            "import time",
            "ms",
            cost["orlgen_100"] * 1e3,
            None,
            "",
            None,
            "pydantic builds one params model per tool at import",
        ),
    ]
    return rows, {
        "wall": times,
        "bare_median": bare,
        "heavy_imported": heavy,
        "importtime_top": top,
        "importtime_children": children,
    }
