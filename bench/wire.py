"""The runtime speaking ORS itself (issue 28): what it costs to start, what it installs, how soon a
dead or hung server ends a rollout, and what a call costs next to the raw openreward SDK.

    python -m bench.wire [--quick]

Each run records its numbers under a label, `before` while the runtime's requirements name
`openreward` (main's runtime, on the SDK) and `after` once they do not (orlgen's own ORS client),
in bench/wire-results.json; a table on stdout shows both labels and their ratio where both exist.
Scenarios (every server a child on a loopback port; the echo env is `examples.echo`):
- start: in a venv holding the runtime alone (`pip install <wheel>`, no extras), a fresh
  `python -c` that imports `generated/echo.py`, constructs the adapter, resets and calls once,
  vs `python -c "import openreward"` (the runtime venv's, or this venv's once the runtime lacks it);
  alternating, the median of each; goal <= 0.35x.
- install: that venv's package count and site-packages size.
- kill / stop: a rollout's call after its server is SIGKILLed (goal <= 8 s) / SIGSTOPped (goal <= 40 s;
  capped, the server let go after the cap).
- grpo_kill: 64 slow-env rollouts in GRPOTrainer's order (all resets, then turn by turn), the server
  killed after half of turn 2: the rest of the turn's wall (goal <= 10 s; capped, then extrapolated
  from the calls that returned).
- overhead: per call, `count`-like tool calls on 1/8/64 sessions at once, the adapter (a thread per
  rollout, as AsyncGRPOTrainer's pool) vs the SDK's `AsyncOpenReward` session `call_tool` (goal <= 1.0x).
  Both sides time the same work: the calls of an episode and the session's deletion, which the
  adapter does inside the call that finishes the episode and the SDK on leaving `async with`
  (until 2026-12 the SDK's side left its deletion out: 2 of every 5 requests, on orlgen's side only).
- slow64: 64 slow-env rollouts at once (setup 1 s, tools 0.2 s) vs the floor (goal <= 1.2x), in
  alternating pairs with the same rollouts through the SDK on one loop; `server_cpu_s` is the
  single-threaded server's CPU per batch (of orlgen's runs), which the floor leaves out.
Every scenario records the 1-minute load average before and after it (`load`): the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import QUIET_ENV, REPO, child_environ, log, median, versions, write_json
from bench.install import ok, run, venv, wheel

os.environ.update(QUIET_ENV)

RESULTS = REPO / "bench" / "wire-results.json"
ROLLOUTS = 64
GOALS = {"start_ratio": 0.35, "kill_s": 8.0, "stop_s": 40.0, "grpo_kill_turn_s": 10.0, "overhead": 1.0, "slow64": 1.2}
START_SCRIPT = (
    "import sys, time; t = time.perf_counter()\n"
    "from generated.echo import EchoEnv, build_dataset\n"
    "env = EchoEnv(base_url=sys.argv[1]); row = build_dataset(num_tasks=1)[0]\n"
    "assert row['target'] in env.reset(**row), env.error\n"
    "assert env.echo(text=row['target']) == 'correct', env.error\n"
    "print(time.perf_counter() - t)\n"
)


# A child of the runtime-only venv imports from that venv and its working directory only.
ISOLATED = {key: value for key, value in {**os.environ, **QUIET_ENV}.items() if not key.startswith("PYTHON")}


def label() -> str:
    """`before` while the runtime requires the openreward SDK, else `after`."""
    needs = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return "before" if any(need.startswith("openreward") for need in needs) else "after"


def echo_server() -> Any:
    from orlgen.serve import ServerProcess

    with child_environ():
        return ServerProcess("examples.echo:Echo").start()


def alternate(reps: int, first: Callable[[], float], second: Callable[[], float]) -> tuple[list, list]:
    """`reps` samples of each, in pairs whose order flips every pair."""
    samples: tuple[list, list] = ([], [])
    for i in range(reps):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for side in order:
            samples[side].append((first, second)[side]())
    return samples


# ── start and install ───────────────────────────────────────────────────────────────────


def _installed(python: Path) -> dict[str, Any]:
    script = (
        "import json, sysconfig; from importlib.metadata import distributions; from pathlib import Path\n"
        "site = Path(sysconfig.get_paths()['purelib'])\n"
        "names = sorted({d.metadata['Name'].lower() for d in distributions()})\n"
        "size = sum(p.stat().st_size for p in site.rglob('*') if p.is_file())\n"
        "print(json.dumps({'packages': len(names), 'mb': round(size / 1e6, 1), 'names': names}))"
    )
    return json.loads(ok(run(python, "-c", script, timeout=120)).stdout)


def _seconds(python: Path | str, *args: str, cwd: Path) -> float:
    """The wall of a fresh interpreter running `args` (the process's, start to exit)."""
    started = time.perf_counter()
    ok(run(python, *args, timeout=300, cwd=cwd, env=ISOLATED))
    return time.perf_counter() - started


def start_and_install(tmp: Path, reps: int) -> dict[str, Any]:
    log("building the runtime-only venv (pip install <wheel>, no extras)")
    python = venv(tmp / "runtime", f"orlgen @ {wheel(tmp).as_uri()}", compile=False)
    installed = _installed(python)
    work = tmp / "work"
    shutil.copytree(REPO / "generated", work / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    peer = python if "openreward" in installed["names"] else Path(sys.executable)
    server = echo_server()
    try:
        _seconds(python, "-c", START_SCRIPT, server.url, cwd=work)  # bytecode and page cache, once
        _seconds(peer, "-c", "import openreward", cwd=work)
        orlgen_s, sdk_s = alternate(
            reps,
            functools.partial(_seconds, python, "-c", START_SCRIPT, server.url, cwd=work),
            functools.partial(_seconds, peer, "-c", "import openreward", cwd=work),
        )
    finally:
        server.stop()
    start = {"orlgen_s": median(orlgen_s), "import_openreward_s": median(sdk_s), "samples": [orlgen_s, sdk_s]}
    start["ratio"] = start["orlgen_s"] / start["import_openreward_s"]
    start["peer"] = "runtime venv" if peer == python else "bench venv"
    openreward_family = [n for n in installed["names"] if n.startswith(("openreward", "anthropic", "openai", "google-genai", "opentelemetry"))]  # fmt: skip
    return {"start": start, "install": {**installed, "sdk_and_vendors": openreward_family}}


# ── dead and hung servers ───────────────────────────────────────────────────────────────


def _rollout_on(server: Any) -> Any:
    from generated.echo import EchoEnv, build_dataset

    env = EchoEnv(base_url=server.url)
    row = build_dataset(num_tasks=1)[0]
    assert row["target"] in env.reset(**row), env.error
    return env


def _timed_call(env: Any, cap: float) -> tuple[float | None, str]:
    """The seconds a call takes (None past `cap`) and the model's text."""
    answer: list[tuple[float, str]] = []
    started = time.monotonic()

    def call_once() -> None:
        text = env.echo(text="x")
        answer.append((time.monotonic() - started, text))

    call = threading.Thread(target=call_once, daemon=True)
    call.start()
    call.join(cap)
    return answer[0] if answer else (None, "")


def killed(cap: float) -> dict[str, Any]:
    server = echo_server()
    env = _rollout_on(server)
    server.stop()
    seconds, text = _timed_call(env, cap)
    return {"seconds": seconds, "cap": cap, "outcome": env.outcome if seconds is not None else None, "text": text[:160]}


def stopped(cap: float) -> dict[str, Any]:
    server = echo_server()
    env = _rollout_on(server)
    os.kill(server.pid, signal.SIGSTOP)
    try:
        seconds, text = _timed_call(env, cap)
    finally:
        os.kill(server.pid, signal.SIGCONT)
        server.stop()
    return {"seconds": seconds, "cap": cap, "outcome": env.outcome if seconds is not None else None, "text": text[:160]}


def slow_env_server(setup_s: float = 0.0, tool_s: float = 0.0) -> Any:
    """`bench.slow_env` served by a child with these delays (the process, to kill it)."""
    from orlgen.serve import ServerProcess

    with child_environ(ORLGEN_SLOW_SETUP_S=str(setup_s), ORLGEN_SLOW_TOOL_S=str(tool_s)):
        return ServerProcess("bench.slow_env:Slow", startup_timeout=120).start()


def grpo_kill(module: Any, cap: float) -> dict[str, Any]:
    """GRPOTrainer's order against a server killed half-way through turn 2."""
    from bench.slow import GENERATIONS

    server = slow_env_server()
    try:
        envs = [module.SlowEnv(base_url=server.url) for _ in range(ROLLOUTS)]
        for i, env in enumerate(envs):
            env.reset(task_index=i // GENERATIONS)
        for env in envs:
            env.run(command="step 0")
        for env in envs[: ROLLOUTS // 2]:
            env.run(command="step 1")
        server.stop()  # SIGKILL
        started, done = time.monotonic(), 0
        for env in envs[ROLLOUTS // 2 :]:
            if time.monotonic() - started > cap:
                break
            env.run(command="step 1")
            done += 1
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    left = ROLLOUTS - ROLLOUTS // 2
    return {
        "seconds": elapsed if done == left else None,
        "extrapolated_s": elapsed / done * left if done else None,
        "calls_timed": done,
        "calls_in_turn": left,
        "cap": cap,
        "env_errors": sum(env.outcome == "env_error" for env in envs[ROLLOUTS // 2 :][:done]),
    }


# ── per-call overhead and the slow env ──────────────────────────────────────────────────


def _orlgen_calls(module: Any, url: str, sessions: int, calls: int) -> float:
    """Seconds per call round, `sessions` adapters each on a thread, `calls` calls each."""
    envs = [module.SlowEnv(base_url=url) for _ in range(sessions)]
    for env in envs:
        env.reset(task_index=0)
    barrier = threading.Barrier(sessions)

    def play(env: Any) -> None:
        barrier.wait()
        for i in range(calls):
            env.run(command=f"c{i}")

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=sessions) as pool:
        list(pool.map(play, envs))
    seconds = time.perf_counter() - started
    for env in envs:
        env.get_reward()
    return seconds / calls


def _sdk_calls(url: str, sessions: int, calls: int) -> float:
    """The same with the SDK's `AsyncOpenReward` sessions and `call_tool`, on one event loop; each
    session deleted when its calls are done, inside the time (see the module docstring)."""
    from openreward import AsyncOpenReward

    async def main() -> float:
        client = AsyncOpenReward(api_key="unused", base_url=url)
        env = client.environments.get("slow", variant="slow", base_url=url)
        opened = [env.session(split="train", index=0) for _ in range(sessions)]
        live = await asyncio.gather(*(session.__aenter__() for session in opened))

        async def play(context: Any, session: Any) -> None:
            for i in range(calls):
                await session.call_tool("run", {"command": f"c{i}"})
            await context.__aexit__(None, None, None)  # the deletion, as the adapter's last call

        started = time.perf_counter()
        await asyncio.gather(*(play(context, session) for context, session in zip(opened, live, strict=True)))
        seconds = time.perf_counter() - started
        await client.environments.aclose()
        return seconds / calls

    return asyncio.run(main())


def load() -> float:
    """The machine's 1-minute load average (shared with other jobs: noted with every scenario)."""
    return round(os.getloadavg()[0], 2)


def overhead(module: Any, reps: int, calls: int) -> dict[str, Any]:
    found: dict[str, Any] = {"load": [load()]}
    server = slow_env_server()
    url = server.url
    try:
        for sessions in (1, 8, 64):
            ours, sdk = alternate(
                reps,
                functools.partial(_orlgen_calls, module, url, sessions, calls),
                functools.partial(_sdk_calls, url, sessions, calls),
            )
            found[str(sessions)] = {
                "orlgen_ms": median(ours) * 1000,
                "sdk_ms": median(sdk) * 1000,
                "ratio": median(ours) / median(sdk),
            }
            log(f"overhead x{sessions}: {found[str(sessions)]}")
    finally:
        server.stop()
    found["load"].append(load())
    return found


def _cpu_s(pid: int) -> float | None:
    """A process's CPU seconds so far (user + system, every thread), None off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _orlgen_batch(module: Any, server: Any, server_cpu: list[float]) -> float:
    """`ROLLOUTS` slow-env rollouts at once, each on its own thread; the server's CPU noted."""
    from bench.slow import concurrent

    before = _cpu_s(server.pid)
    seconds = concurrent([module.SlowEnv(base_url=server.url) for _ in range(ROLLOUTS)])
    after = _cpu_s(server.pid)
    if before is not None and after is not None:
        server_cpu.append(after - before)
    return seconds


def _sdk_batch(url: str) -> float:
    """The same rollouts (open, prompt, 3 calls, delete) through the SDK's sessions on one loop."""
    from openreward import AsyncOpenReward

    from bench.slow import GENERATIONS, TURNS

    async def main() -> float:
        client = AsyncOpenReward(api_key="unused", base_url=url)
        env = client.environments.get("slow", variant="slow", base_url=url)

        async def rollout(i: int) -> None:
            async with env.session(split="train", index=i // GENERATIONS) as session:
                await session.get_prompt()
                for turn in range(TURNS):
                    await session.call_tool("run", {"command": f"step {turn}"})

        started = time.perf_counter()
        await asyncio.gather(*(rollout(i) for i in range(ROLLOUTS)))
        seconds = time.perf_counter() - started
        await client.environments.aclose()
        return seconds

    return asyncio.run(main())


def slow64(module: Any, quick: bool, reps: int) -> dict[str, Any]:
    from bench.slow import delays, floor_s

    setup_s, tool_s = delays(quick)
    floor, server_cpu, started_load = floor_s(setup_s, tool_s), [], load()
    server = slow_env_server(setup_s, tool_s)
    try:
        ours, sdk = alternate(
            reps,
            functools.partial(_orlgen_batch, module, server, server_cpu),
            functools.partial(_sdk_batch, server.url),
        )
    finally:
        server.stop()
    seconds = median(ours)
    return {
        "seconds": seconds,
        "floor_s": floor,
        "ratio": seconds / floor,
        "sdk_s": median(sdk),
        "sdk_ratio": median(sdk) / floor,
        "vs_sdk": seconds / median(sdk),
        "server_cpu_s": median(server_cpu) if server_cpu else None,
        "samples": [ours, sdk],
        "load": [started_load, load()],
    }


# ── the run ─────────────────────────────────────────────────────────────────────────────


PARTS = ("start", "kill", "stop", "grpo_kill", "overhead", "slow64")


def measure(quick: bool, parts: tuple[str, ...], save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The scenarios named in `parts` (`start` is start and install); `save` gets what is found
    so far after each (a slow machine may not see the end)."""
    from bench.slow import TURNS, generated_module

    reps = 3 if quick else 7
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-wire-") as tmp:
        (Path(tmp) / "install").mkdir()
        (Path(tmp) / "slow").mkdir()
        if "start" in parts:
            found.update(start_and_install(Path(tmp) / "install", reps))
            save(found)
        if "kill" in parts:
            found["kill"] = killed(cap=60.0)
            save(found)
        if "stop" in parts:
            found["stop"] = stopped(cap=60.0 if quick else 240.0)
            save(found)
        module = generated_module(Path(tmp) / "slow") if {"grpo_kill", "overhead", "slow64"} & set(parts) else None
        if "grpo_kill" in parts:
            found["grpo_kill"] = grpo_kill(module, cap=30.0 if quick else 90.0)
            save(found)
        if "overhead" in parts:
            found["overhead"] = overhead(module, reps, calls=TURNS)  # the slow env finishes after TURNS
            save(found)
        if "slow64" in parts:
            found["slow64"] = slow64(module, quick, reps)
            save(found)
    return found


def _rows(runs: dict[str, Any]) -> list[tuple[str, Any, Any, str]]:
    def get(run: dict[str, Any] | None, *path: str) -> Any:
        for key in path:
            run = None if run is None else run.get(key)
        return run

    before, after = runs.get("before"), runs.get("after")
    rows = [
        ("start: module+construct+reset+call / import openreward", ("start", "ratio"), GOALS["start_ratio"]),
        ("start: module+construct+reset+call, s", ("start", "orlgen_s"), None),
        ("start: python -c 'import openreward', s", ("start", "import_openreward_s"), None),
        ("install: packages (runtime only)", ("install", "packages"), None),
        ("install: site-packages MB", ("install", "mb"), None),
        ("SIGKILL: call to unscored, s", ("kill", "seconds"), GOALS["kill_s"]),
        ("SIGSTOP: call to unscored, s (None: past the cap)", ("stop", "seconds"), GOALS["stop_s"]),
        ("64 in GRPO order, killed mid-turn: the turn, s", ("grpo_kill", "seconds"), GOALS["grpo_kill_turn_s"]),
        ("  the same, extrapolated from the calls timed, s", ("grpo_kill", "extrapolated_s"), None),
        *[(f"per call x{n} / raw SDK call_tool", ("overhead", str(n), "ratio"), GOALS["overhead"]) for n in (1, 8, 64)],
        ("64 slow-env rollouts / floor", ("slow64", "ratio"), GOALS["slow64"]),
        ("  the same through the SDK / floor", ("slow64", "sdk_ratio"), None),
        ("  orlgen / SDK", ("slow64", "vs_sdk"), None),
        ("  the server's CPU per batch, s", ("slow64", "server_cpu_s"), None),
    ]
    table = []
    for name, path, goal in rows:
        b, a = get(before, *path), get(after, *path)
        ratio = f"{a / b:.2f}x" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else ""
        table.append((name, b, a, f"{ratio}" + (f"  (goal <= {goal})" if goal is not None else "")))
    return table


def text_table(runs: dict[str, Any]) -> str:
    def cell(value: Any) -> str:
        return f"{value:.2f}" if isinstance(value, float) else "-" if value is None else str(value)

    lines = [f"{'':56} {'before':>10} {'after':>10}   after/before"]
    lines += [f"{name:56} {cell(b):>10} {cell(a):>10}   {note}" for name, b, a, note in _rows(runs)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.wire", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and shorter caps")
    parser.add_argument("--label", choices=("before", "after"), help="record under this label (default: by pyproject)")
    parser.add_argument("--only", help=f"comma-separated scenarios, of {','.join(PARTS)} (others kept from the file)")
    args = parser.parse_args(argv)
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    which = args.label or label()
    parts = tuple(args.only.split(",")) if args.only else PARTS
    log(f"measuring '{which}': {', '.join(parts)}")
    kept = {**runs.get(which, {}), "quick": args.quick, "versions": versions()}

    def save(found: dict[str, Any]) -> None:
        runs[which] = {**kept, **found}
        write_json(RESULTS, runs)
        log(f"saved: {', '.join(found)}")

    save(measure(args.quick, parts, save))
    print(text_table(runs))


if __name__ == "__main__":
    main()
