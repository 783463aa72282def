"""The seven measurements. Each returns `Row`s for the table plus details for results.json.

orlgen and TRL run against the same server in the same run, in alternating pairs (the order
flips every pair); a row reports the median of each side and the ratio of medians (orlgen / TRL).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import re
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    PY,
    REPO,
    Paired,
    Served,
    child_env,
    median,
    run_child,
    trl_addressing,
    trl_env,
)

ORLGEN_CLI = str(Path(PY).with_name("orlgen"))
HELPDESK_MODULE = REPO / "generated" / "helpdesk.py"
HELPDESK_SNAPSHOT = REPO / "generated" / "helpdesk.snapshot.json"


@dataclass
class Row:
    id: str
    scenario: str
    case: str
    metric: str
    unit: str  # "s", "ms", "MB", "req", "/s", "facts", "%"
    orlgen: float | None
    trl: float | None = None
    target: str = ""
    met: bool | None = None  # None: no target
    note: str = ""
    lower_is_better: bool = True
    samples: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.orlgen is None or self.trl in (None, 0):
            return None
        return self.orlgen / self.trl

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


def _load_module(path: Path, name: str | None = None) -> Any:
    name = name or f"bench_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _quiet_trl() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from trl.experimental.openreward import OpenRewardSpec
    logging.getLogger("trl.experimental.openreward").setLevel(logging.ERROR)
    return OpenRewardSpec


# ── 1. trainer start ────────────────────────────────────────────────────────────────────


def _start_run(
    side: str, served: Served, module: Path | None, extra: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    args = [PY, "-m", "bench.worker", "start", side, served.url, *extra]
    if side == "orlgen":
        args += ["--module", str(module)]
    with served.counting() as counts:
        run = run_child(args, env=trl_env(served.url) if side == "trl" else child_env())
    return run.json(), counts


def trainer_start(
    helpdesk: Served, bulk: Served, bulk_module: Path, bulk_all_module: Path, pairs: int
) -> tuple[list[Row], dict[str, Any]]:
    rows: list[Row] = []
    details: dict[str, Any] = {}
    log("1. trainer start: warm-up runs (discarded)")
    _start_run("orlgen", helpdesk, HELPDESK_MODULE, [])
    _start_run("trl", helpdesk, None, ["--no-metadata"])
    default_trl, default_counts = _start_run("trl", helpdesk, None, [])
    details["helpdesk_trl_default"] = {"answer": default_trl, "requests": default_counts["total"]}

    cases = [
        (
            "1a",
            "helpdesk: 300 tasks, all in the snapshot; fresh interpreter",
            helpdesk,
            HELPDESK_MODULE,
            [],
            ["--no-metadata"],
            0,
        ),
        (
            "1b",
            "helpdesk, `datasets` already imported (as after `from trl import GRPOTrainer`)",
            helpdesk,
            HELPDESK_MODULE,
            ["--preimport", "datasets"],
            ["--no-metadata", "--preimport", "datasets"],
            0,
        ),
        (
            "1c",
            "bulk: 20,000 tasks, default snapshot (200 sampled: 50 of the 64 tasks in it)",
            bulk,
            bulk_module,
            [],
            [],
            2,
        ),
    ]
    for row_id, case, served, module, orlgen_extra, trl_extra, allowed in cases:
        wall, reqs = Paired(), Paired()
        last: dict[str, Any] = {}
        for i in range(pairs):
            log(f"1. trainer start {row_id}: pair {i + 1}/{pairs}")
            order = ("orlgen", "trl") if i % 2 == 0 else ("trl", "orlgen")
            got = {}
            for side in order:
                answer, counts = _start_run(side, served, module, orlgen_extra if side == "orlgen" else trl_extra)
                if "error" in answer:
                    raise RuntimeError(f"trainer start {row_id} {side}: {answer['error']}")
                got[side] = (answer, counts)
            wall.add(got["orlgen"][0]["seconds"], got["trl"][0]["seconds"])
            reqs.add(got["orlgen"][1]["total"], got["trl"][1]["total"])
            last = {side: {"answer": a, "requests": c} for side, (a, c) in got.items()}
        details[row_id] = {"wall": wall.summary(), "requests": reqs.summary(), "last": last}
        w, r = wall.summary(), reqs.summary()
        trl_note = (
            (
                f" TRL with include_metadata=False: its default fails on helpdesk's mixed-type `sla_hours` "
                f"({default_trl.get('error', 'no error?')[:40]}…) after {default_counts['total']} requests."
            )
            if "--no-metadata" in trl_extra
            else ""
        )
        by_path = last["orlgen"]["requests"]["by_path"]
        sdk_calls = sum(n for path, n in by_path.items() if not path.endswith(("_session",)))
        phases = {side: last[side]["answer"]["phases"] for side in ("orlgen", "trl")}
        split = (
            f"orlgen: import {phases['orlgen']['import']:.2f} s, build_dataset {phases['orlgen']['dataset']:.2f} s,"
            f" 8 instances {phases['orlgen']['instances'] * 1e3:.0f} ms; TRL: import + spec "
            f"{phases['trl']['import']:.2f} s, train_dataset {phases['trl']['dataset']:.2f} s, 8 factory calls "
            f"{phases['trl']['instances']:.2f} s (last pair)"
        )
        rows.append(
            Row(
                row_id,
                "1 Trainer start",
                case,
                "wall time",
                "s",
                w["orlgen_median"],
                w["trl_median"],
                "≤ 0.10× TRL",
                w["ratio_of_medians"] <= 0.10,
                f"median pair ratio {w['median_pair_ratio']:.3f}. {split}.{trl_note}",
                samples=w,
            )
        )
        rows.append(
            Row(
                row_id,
                "1 Trainer start",
                case,
                "HTTP requests (server-side)",
                "req",
                r["orlgen_median"],
                r["trl_median"],
                f"≤ {allowed}" + (" (from snapshot)" if allowed == 0 else ""),
                r["orlgen_median"] <= allowed,
                (
                    (
                        f"orlgen: {', '.join(f'{k} ×{v}' for k, v in by_path.items())} "
                        f"({sdk_calls} without the SDK's create/delete_session wrapper)"
                    )
                    if by_path
                    else ""
                ),
                samples=r,
            )
        )
        tools = {side: last[side]["answer"]["tools"] for side in ("orlgen", "trl")}
        if row_id == "1a":
            missing = sorted(set(tools["orlgen"]) - set(tools["trl"]))
            rows.append(
                Row(
                    row_id,
                    "1 Trainer start",
                    case,
                    "tools on the adapter class",
                    "tools",
                    len(tools["orlgen"]),
                    len(tools["trl"]),
                    "",
                    None,
                    (
                        f"TRL lacks {', '.join(missing)}: task-only, offered on VIP tasks; TRL probes task 0 only"
                        if missing
                        else ""
                    ),
                )
            )
    # The 20k-task snapshot: every task is in it, so no request, but the whole file is read.
    runs = []
    for _ in range(2):
        answer, counts = _start_run("orlgen", bulk, bulk_all_module, [])
        runs.append((answer["seconds"], counts["total"]))
    details["1d"] = runs
    rows.append(
        Row(
            "1d",
            "1 Trainer start",
            "bulk, snapshot with all 20,000 tasks (11 MB), orlgen only",
            "wall time",
            "s",
            median([s for s, _ in runs]),
            None,
            "",
            None,
            f"{median([n for _, n in runs]):.0f} requests; build_dataset parses the whole snapshot " "to take 64 tasks",
            samples={"orlgen": runs},
        )
    )
    return rows, details


# ── 2. import cost ──────────────────────────────────────────────────────────────────────

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
    bare = median(times["bare"])
    cost = {key: median(values) - bare for key, values in times.items()}
    pair = Paired(
        [o - b for o, b in zip(times["orlgen"], times["bare"], strict=False)],
        [t - b for t, b in zip(times["trl"], times["bare"], strict=False)],
    )
    probe = run_child(
        [
            PY,
            "-c",
            "import generated.helpdesk, sys, json; "
            f"print(json.dumps(sorted(m for m in {_HEAVY!r} if m in sys.modules)))",
        ],
        env=env,
    )
    heavy = probe.json()
    timing = run_child([PY, "-X", "importtime", "-c", "import generated.helpdesk"], env=env)
    top = _importtime_top(timing.stderr)
    own_self, own = (us / 1e6 for us in top.get("generated.helpdesk", (0, 0)))
    children = _importtime_children(timing.stderr, "generated.helpdesk")
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


def _importtime_top(stderr: str) -> dict[str, tuple[int, int]]:
    """Top-level entries of `-X importtime`: name → (self µs, cumulative µs)."""
    return {name: times for name, depth, times in _importtime(stderr) if depth == 0}


def _importtime_children(stderr: str, parent: str) -> dict[str, int]:
    """Direct imports made by the top-level import `parent`: name → cumulative µs."""
    children: dict[str, int] = {}
    pending: dict[str, int] = {}
    for name, depth, (_, cumulative) in _importtime(stderr):
        if depth == 0:
            if name == parent:
                children = pending
            pending = {}
        elif depth == 1:
            pending[name] = cumulative
    return children


def _importtime(stderr: str) -> list[tuple[str, int, tuple[int, int]]]:
    entries = []
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S.*)$", line)
        if match:
            entries.append(
                (match.group(4).strip(), len(match.group(3)) // 2, (int(match.group(1)), int(match.group(2))))
            )
    return entries


# ── 3. tool-call overhead ───────────────────────────────────────────────────────────────


class _Binders:
    """One helpdesk session per binder on task 0: orlgen's generated adapter, the raw SDK
    (synchronous `Session.call_tool`), TRL's adapter."""

    def __init__(self, served: Served, module: Any, with_trl: bool) -> None:
        import openreward

        self.order_id = _helpdesk_specs()[0]["order"]["order_id"]
        self.orlgen = module.HelpdeskEnv(base_url=served.url)
        prompt = self.orlgen.reset(task_index=0, split="train")
        assert not prompt.startswith("Error"), prompt
        client = openreward.OpenReward(base_url=served.url)
        environment = client.environments.get("helpdesk", variant="helpdesk", base_url=served.url)
        self._raw_context = environment.session(split="train", index=0)
        self.raw = self._raw_context.__enter__()
        self.raw.get_prompt()
        self.trl = None
        if with_trl:
            with trl_addressing(served.url):
                spec = _quiet_trl()(served.url, num_tasks=1)
                self.trl = spec.environment_factory()
                self.trl.reset(task_index=0)

    def calls(self, tool: str) -> dict[str, Any]:
        if tool == "list_policies":
            found = {"orlgen": self.orlgen.list_policies, "raw": lambda: self.raw.call_tool("list_policies", {})}
            if self.trl is not None:
                found["trl"] = self.trl.list_policies
        else:
            order = self.order_id
            found = {
                "orlgen": lambda: self.orlgen.get_order(order_id=order),
                "raw": lambda: self.raw.call_tool("get_order", {"order_id": order}),
            }
            if self.trl is not None:
                found["trl"] = lambda: self.trl.get_order(order_id=order)
        return found

    def close(self) -> None:
        self.orlgen._end_session()
        self._raw_context.__exit__(None, None, None)
        if self.trl is not None:
            self.trl._close()


def _interleaved(calls: dict[str, Any], per_binder: int, served: Served) -> dict[str, Any]:
    """`per_binder` timed calls each, one call per binder in turn (the order rotates every
    round), so that load from anything else on the machine hits every binder alike.

    Per call: wall time and this process's CPU time (caller thread + the SDK's loop thread, not
    the server's). Before that, 50 calls per binder counted server-side: requests, TCP connections."""
    names = list(calls)
    requests: dict[str, float] = {}
    connections: dict[str, float] = {}
    for name in names:  # also the warm-up
        with served.counting() as counts:
            for _ in range(50):
                calls[name]()
        requests[name], connections[name] = counts["total"] / 50, counts["connections"] / 50
    wall: dict[str, list[float]] = {name: [] for name in [*names, "raw_a", "raw_b"]}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    clock, cpu_clock = time.perf_counter, time.process_time
    for round_ in range(per_binder):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            fn = calls[name]
            cpu_started = cpu_clock()
            started = clock()
            fn()
            elapsed = clock() - started
            cpu[name].append(cpu_clock() - cpu_started)
            wall[name].append(elapsed)
            if name == "raw":
                wall["raw_a" if round_ % 2 == 0 else "raw_b"].append(elapsed)
    return {
        "wall": wall,
        "cpu_per_call": {n: sum(cpu[n]) / len(cpu[n]) for n in names},
        "requests_per_call": requests,
        "connections_per_call": connections,
    }


def _own_cost(module: Any, calls: int = 20000) -> dict[str, float] | None:
    """Seconds per call with an in-memory session that answers at once (no network): orlgen's
    generated method vs the SDK's synchronous `Session.call_tool` wrapper over the same fake,
    each hopping to an event-loop thread. None when orlgen's runtime no longer fits the probe
    (it sets the adapter's private `_session` to an object with an async `call_tool`)."""
    import asyncio

    from openreward.api.environments.client import Session
    from openreward.api.environments.types import TextBlock, ToolOutput

    output = ToolOutput(blocks=[TextBlock(text="policy text " * 100)], reward=None, metadata=None, finished=False)

    class InstantSession:
        async def call_tool(self, name: str, payload: Any) -> Any:
            return output

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        adapter = module.HelpdeskEnv(base_url="http://127.0.0.1:9")
        adapter._session = InstantSession()
        raw = Session(InstantSession(), loop)
        probe = adapter.get_order(order_id="ORD-1")
        if probe.startswith("Error"):
            return None
        fns = {
            "orlgen_list": adapter.list_policies,
            "raw_list": lambda: raw.call_tool("list_policies", {}),
            "orlgen_get": lambda: adapter.get_order(order_id="ORD-75603"),
            "raw_get": lambda: raw.call_tool("get_order", {"order_id": "ORD-75603"}),
        }
        found: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(10):
            for name, fn in fns.items():
                started = time.perf_counter()
                for _ in range(calls // 10):
                    fn()
                found[name].append((time.perf_counter() - started) / (calls // 10))
        adapter._session = None
        return {name: median(values) for name, values in found.items()}
    except Exception:  # the probe depends on orlgen internals
        return None
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)


def call_overhead(
    served: Served, stalled: Served, per_binder: int, stalled_calls: int
) -> tuple[list[Row], dict[str, Any]]:
    module = _load_module(HELPDESK_MODULE, "bench_helpdesk_calls")
    rows: list[Row] = []
    details: dict[str, Any] = {}
    binders = _Binders(served, module, with_trl=True)
    try:
        for tool in ("list_policies", "get_order"):
            log(f"3. tool-call overhead: {tool}, {per_binder} calls per binder")
            sample = binders.calls(tool)
            outputs = {name: fn() for name, fn in sample.items()}
            assert not str(outputs["orlgen"]).startswith("Error"), outputs["orlgen"]
            found = _interleaved(sample, per_binder, served)
            times, cpu, conns = found["wall"], found["cpu_per_call"], found["connections_per_call"]
            med = {name: median(values) for name, values in times.items()}
            overhead = (med["orlgen"] - med["raw"]) / med["raw"]
            noise = abs(med["raw_a"] - med["raw_b"]) / med["raw"]
            trl_overhead = (med["trl"] - med["raw"]) / med["raw"]
            details[tool] = {
                "median_s": med,
                "overhead": overhead,
                "trl_overhead": trl_overhead,
                "noise_raw_vs_raw": noise,
                "calls": {k: len(v) for k, v in times.items()},
                **{k: v for k, v in found.items() if k != "wall"},
            }
            rows.append(
                Row(
                    "3",
                    "3 Tool-call overhead",
                    f"`{tool}` ({'no arguments' if tool == 'list_policies' else 'one validated argument'}), "
                    f"TCP_NODELAY server, {per_binder} calls each",
                    "per call",
                    "ms",
                    med["orlgen"] * 1e3,
                    med["trl"] * 1e3,
                    "overhead ≤ 5%",
                    overhead <= 0.05,
                    f"raw SDK {med['raw'] * 1e3:.3f} ms → orlgen overhead {overhead * 100:+.1f}% "
                    f"({(med['orlgen'] - med['raw']) * 1e6:+.0f} µs), TRL {trl_overhead * 100:+.1f}%; "
                    f"noise floor (raw vs raw) {noise * 100:.1f}%; client CPU per call: raw "
                    f"{cpu['raw'] * 1e6:.0f} µs, orlgen {cpu['orlgen'] * 1e6:.0f} µs, TRL {cpu['trl'] * 1e6:.0f} µs;"
                    f" new TCP connections per call: raw {conns['raw']:.2f}, orlgen {conns['orlgen']:.2f}, "
                    f"TRL {conns['trl']:.2f}",
                )
            )
    finally:
        binders.close()

    log("3. tool-call overhead: orlgen's own cost, in-memory session")
    own = _own_cost(module)
    details["own_cost_s"] = own
    if own is not None:
        real = details["list_policies"]["median_s"]["raw"]
        rows.append(
            Row(
                "3c",
                "3 Tool-call overhead",
                "orlgen's own cost per call: an in-memory session that answers at "
                "once, no network (vs the SDK's sync `Session.call_tool` wrapper over the same fake, in the note)",
                "per call",
                "µs",
                own["orlgen_list"] * 1e6,
                None,
                "",
                None,
                f"raw SDK wrapper {own['raw_list'] * 1e6:.0f} µs → orlgen adds "
                f"{(own['orlgen_list'] - own['raw_list']) * 1e6:+.0f} µs on `list_policies`, "
                f"{(own['orlgen_get'] - own['raw_get']) * 1e6:+.0f} µs on `get_order` (validation included): "
                f"{(own['orlgen_list'] - own['raw_list']) / real * 100:+.1f}% / "
                f"{(own['orlgen_get'] - own['raw_get']) / real * 100:+.1f}% of a real call",
            )
        )
    log(f"3. tool-call overhead: orlgen.serve as is (no TCP_NODELAY), {stalled_calls} calls per binder")
    binders = _Binders(stalled, module, with_trl=False)
    try:
        found = _interleaved(binders.calls("list_policies"), stalled_calls, stalled)
    finally:
        binders.close()
    wall = found["wall"]
    med = {name: median(values) for name, values in wall.items()}
    conns = found["connections_per_call"]
    stalled_share = {name: sum(t > 0.030 for t in wall[name]) / len(wall[name]) for name in ("orlgen", "raw")}
    fast = {name: median([t for t in wall[name] if t <= 0.030]) for name in ("orlgen", "raw")}
    slow = {name: median([t for t in wall[name] if t > 0.030]) for name in ("orlgen", "raw")}
    details["stalled"] = {
        "median_s": med,
        "stalled_share": stalled_share,
        "fast_median_s": fast,
        "stalled_median_s": slow,
        **{k: v for k, v in found.items() if k != "wall"},
    }

    def ms(seconds: float) -> str:
        return "—" if seconds != seconds else f"{seconds * 1e3:.1f} ms"  # NaN: no call of that kind

    rows.append(
        Row(
            "3s",
            "3 Tool-call overhead",
            f"`list_policies`, served by `orlgen.serve` as is (no TCP_NODELAY), " f"{stalled_calls} calls each",
            "calls that stalled > 30 ms",
            "%",
            stalled_share["orlgen"] * 100,
            None,
            "",
            None,
            f"raw SDK: {stalled_share['raw'] * 100:.0f}%. Stalled calls take {ms(slow['raw'])} (raw) / "
            f"{ms(slow['orlgen'])} (orlgen), the others {ms(fast['raw'])} / {ms(fast['orlgen'])}. A call "
            f"stalls when the SDK reuses a keep-alive connection: the response's second write waits for the "
            f"client's delayed ACK. Reuse is the SDK pool's choice (new connection per call in 50 counted "
            f"calls: raw {conns['raw']:.2f}, orlgen {conns['orlgen']:.2f}), so medians ({ms(med['raw'])} / "
            f"{ms(med['orlgen'])}) say nothing about orlgen",
        )
    )
    return rows, details


def _helpdesk_specs() -> list[dict[str, Any]]:
    from orlgen.snapshot import load

    return [task.spec for task in load(HELPDESK_SNAPSHOT).tasks["train"].tasks]


# ── 4. episodes per second ──────────────────────────────────────────────────────────────


def _episode(env: Any, side: str, index: int, order_id: str) -> list[str]:
    outputs = [env.reset(task_index=index, split="train")]
    outputs.append(env.list_policies())
    outputs.append(env.search_orders(query=""))
    outputs.append(env.get_order(order_id=order_id))
    if side == "orlgen":
        env._end_session()
    else:
        env._close()
    return outputs


def _episodes_run(
    side: str, factory: Any, threads: int, per_thread: int, specs: list[dict[str, Any]]
) -> tuple[float, int]:
    envs = [factory() for _ in range(threads)]
    errors: list[str] = []

    def work(t: int) -> None:
        for k in range(per_thread):
            index = (t * 37 + k) % len(specs)
            outputs = _episode(envs[t], side, index, specs[index]["order"]["order_id"])
            bad = [o for o in outputs if not o or o.startswith("Error")]
            if bad:
                errors.append(bad[0][:200])

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{side} episode failed: {errors[0]}")
    return seconds, threads * per_thread


def episodes(served: Served, reps: int, per_thread: dict[int, int]) -> tuple[list[Row], dict[str, Any]]:
    module = _load_module(HELPDESK_MODULE, "bench_helpdesk_episodes")
    specs = _helpdesk_specs()
    with trl_addressing(served.url):
        spec = _quiet_trl()(served.url, num_tasks=1)
        trl_factory = spec.environment_factory
        trl_factory()  # tool discovery happens here, once, as in a trainer
    factories = {"orlgen": lambda: module.HelpdeskEnv(base_url=served.url), "trl": trl_factory}
    _episodes_run("orlgen", factories["orlgen"], 1, 2, specs)  # warm-up, incl. orlgen's one drift check
    _episodes_run("trl", factories["trl"], 1, 2, specs)
    rows: list[Row] = []
    details: dict[str, Any] = {}
    for threads, count in per_thread.items():
        rate, per_episode = Paired(), Paired()
        for i in range(reps):
            log(f"4. episodes: {threads} thread(s), rep {i + 1}/{reps}")
            got = {}
            for side in (("orlgen", "trl") if i % 2 == 0 else ("trl", "orlgen")):
                with served.counting() as counts:
                    seconds, done = _episodes_run(side, factories[side], threads, count, specs)
                got[side] = (done / seconds, counts["total"] / done, counts["by_path"])
            rate.add(got["orlgen"][0], got["trl"][0])
            per_episode.add(got["orlgen"][1], got["trl"][1])
            details[f"{threads}_by_path"] = {side: value[2] for side, value in got.items()}
        r, p = rate.summary(), per_episode.summary()
        details[f"{threads}_threads"] = {"episodes_per_s": r, "requests_per_episode": p}
        rows.append(
            Row(
                "4",
                "4 Full episode",
                f"reset + prompt, 3 tool calls, close; {threads} concurrent "
                f"rollout{'s' if threads > 1 else ''} ({threads}×{count} episodes per rep)",
                "episodes/s",
                "/s",
                r["orlgen_median"],
                r["trl_median"],
                "",
                None,
                f"HTTP requests per episode: orlgen {p['orlgen_median']:.1f}, TRL {p['trl_median']:.1f}",
                lower_is_better=False,
                samples=r,
            )
        )
    return rows, details


# ── 5. generator speed ──────────────────────────────────────────────────────────────────


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


# ── 6. scale of capture ─────────────────────────────────────────────────────────────────


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


# ── 7. fidelity ─────────────────────────────────────────────────────────────────────────


def fidelity() -> tuple[list[Row], dict[str, Any]]:
    log("7. schema fidelity (bench.fidelity.measure)")
    from bench.fidelity import measure

    with contextlib.redirect_stdout(sys.stderr):
        result = measure()
    orlgen, trl = result.counts("orlgen"), result.counts("trl")
    facts = result.facts()
    tools = sum(result.tools.values())
    prompt = {side: sum(sizes[side] for sizes in result.prompt.values()) for side in ("raw", "orlgen", "trl")}
    hidden = {
        binder: len({(o.fact.group, o.fact.tool) for o in result.lost(binder) if o.reason.startswith("tool not shown")})
        for binder in ("orlgen", "trl")
    }
    rows = [
        Row(
            "7",
            "7 Fidelity",
            f"{tools} tools, {facts} schema facts (examples, SDK toolsets, hostile)",
            "facts lost",
            "facts",
            orlgen["lost"],
            trl["lost"],
            "0 lost",
            orlgen["lost"] == 0,
            f"structural {orlgen['structural']} vs {trl['structural']}; as text {orlgen['text']} vs {trl['text']}",
        ),
        Row(
            "7",
            "7 Fidelity",
            "〃",
            "tools not shown to the model",
            "tools",
            hidden["orlgen"],
            hidden["trl"],
            "",
            None,
            "",
        ),
        Row(
            "7",
            "7 Fidelity",
            "〃",
            "facts altered (text changed, name needlessly changed)",
            "facts",
            len(result.altered("orlgen")),
            len(result.altered("trl")),
            "0 altered on examples",
            not result.altered("orlgen", "examples"),
            "",
        ),
        Row(
            "7",
            "7 Fidelity",
            "〃",
            "prompt size (tools JSON the model sees)",
            "chars",
            prompt["orlgen"],
            prompt["trl"],
            "",
            None,
            f"raw schemas {prompt['raw']}",
        ),
    ]
    return rows, {"summary": result.to_json()["total"], "seconds": result.seconds}


__all__ = [
    "Row",
    "call_overhead",
    "capture",
    "episodes",
    "fidelity",
    "generator_speed",
    "import_cost",
    "scale",
    "trainer_start",
]
