"""`python -m bench.eval_vs_inspect [--quick]`: `orlgen eval` beside `inspect-openreward`, end to end.

Both harnesses run the same loopback ORS server (the helpdesk example, served by the SDK's
`Server` with request counting: `bench.served`), the same scripted OpenAI-compatible endpoint
with a fixed latency per request (`bench.chat_server`, in this process: the harnesses run as
child processes), the same 16 test tasks × 4 samples, 16 rollouts at once. The policy solves
each ticket with the example's own solution, skipping the action step on a third of the tickets
(chosen by ticket, not by request seed, so both harnesses face the same per-task rewards).

inspect-openreward (PyPI, pinned below) is installed in its own venv under `.bench-cache/` (made
once, reused); it reaches the loopback server only through `OPENREWARD_SESSION_URL` and
`OPENREWARD_API_URL`, and the endpoint through Inspect's `openai-api` provider
(`BENCH_BASE_URL`). Measured per harness: wall time of the whole command (start-up, imports,
task loading, rollouts, writing results), rollouts/s, requests to the model and to the env
(by path), mean reward. Results: `bench/eval-vs-inspect-results.json`; docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib
from pathlib import Path
from typing import Any

from bench.common import QUIET_ENV, REPO, child_env, child_environ

os.environ.update(QUIET_ENV)  # before anything imports openreward

PINS = ("inspect-openreward==0.3.0", "inspect-ai==0.3.285", "openreward==0.1.167", "openai==3.57.0")
CACHE = REPO / ".bench-cache" / "inspect-venv"
RESULTS = REPO / "bench" / "eval-vs-inspect-results.json"
ENV_KEY = "helpdesk"

TASK_FILE = """
from inspect_ai import Task, task
from openreward import OpenReward
from inspect_openreward import openreward_dataset, openreward_scorer, openreward_solver


@task
def helpdesk(split: str = "test", limit: int = 16):
    env = OpenReward().environments.get("helpdesk")
    return Task(
        dataset=openreward_dataset(env, split, limit=limit),
        solver=openreward_solver(env),
        scorer=openreward_scorer(),
    )
"""


@functools.cache
def _tickets() -> dict[str, dict[str, Any]]:
    """Every helpdesk task by ticket id (made once; the endpoint's threads share it)."""
    from examples.helpdesk import make_task

    return {spec["ticket_id"]: spec for split, count in (("test", 60), ("train", 300)) for spec in
            (make_task(split, index) for index in range(count))}  # fmt: skip


def helpdesk_policy(body: dict[str, Any]) -> dict[str, Any]:
    """The example's solution of the ticket in the prompt; on a third of the tickets (by the
    ticket's CRC) the action step is skipped, so those score less. Then a closing answer."""
    from bench.chat_server import answer, call, turn_of
    from examples.helpdesk import scripted_solution

    ticket = re.search(r"Support ticket (\S+)", _text(body["messages"]))
    if ticket is None:
        return answer("I cannot help with that.")
    steps = scripted_solution(_tickets()[ticket.group(1)])
    if zlib.crc32(ticket.group(1).encode()) % 3 == 0 and len(steps) > 2:
        steps = [step for step in steps if step[0] not in ("issue_refund", "update_shipping", "cancel_order")]
    turn = turn_of(body)
    if turn >= len(steps):
        return answer("The ticket is resolved.")
    name, arguments = steps[turn]
    return call(name, arguments, turn)


def _text(messages: list[dict[str, Any]]) -> str:
    """The first user message's text, whether a string or content parts."""
    content = next(m["content"] for m in messages if m["role"] == "user")
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


def inspect_venv() -> Path:
    """The venv holding inspect-openreward at `PINS`, made once (pip, PyPI) and reused."""
    stamp = CACHE / "pins.txt"
    python = CACHE / "bin" / "python"
    if stamp.exists() and stamp.read_text() == "\n".join(PINS):
        return CACHE
    if not python.exists():
        subprocess.run([str(Path(sys.base_prefix) / "bin" / "python3"), "-m", "venv", str(CACHE)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PINS], check=True)
    stamp.write_text("\n".join(PINS))
    return CACHE


def env_requests(url: str, reset: bool = False) -> dict[str, Any]:
    route = "reset" if reset else "requests"
    request = urllib.request.Request(f"{url}/__bench__/{route}", method="POST" if reset else "GET")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def run_inspect(venv: Path, chat_url: str, env_url: str, tasks: int, k: int, concurrency: int, scratch: Path) -> dict:
    work = scratch / "inspect"
    work.mkdir()
    (work / "bench_task.py").write_text(TASK_FILE)
    env = {
        **child_env(),
        "OPENREWARD_API_URL": env_url,
        "OPENREWARD_SESSION_URL": env_url,
        "OPENREWARD_API_KEY": "bench",
        "BENCH_BASE_URL": chat_url,
        "BENCH_API_KEY": "bench",
        "INSPECT_LOG_DIR": str(work / "logs"),
        "PYTHONPATH": "",
    }
    command = [
        str(venv / "bin" / "inspect"), "eval", "bench_task.py", "--model", "openai-api/bench/scripted",
        "-T", f"limit={tasks}", "--epochs", str(k), "--max-samples", str(concurrency),
        "--max-connections", str(concurrency), "--log-format", "json", "--display", "none",
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"inspect eval failed ({done.returncode}): {done.stderr[-3000:]}")
    (log,) = sorted((work / "logs").glob("*.json"))
    data = json.loads(log.read_text())
    samples = data.get("samples", [])
    rewards = [s["scores"]["openreward_scorer"]["value"] for s in samples]
    stats = data.get("stats", {})
    return {
        "wall_s": wall,
        "rollouts": len(rewards),
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "rollouts_phase_s": _seconds(stats.get("started_at"), stats.get("completed_at")),
        "mean_rollout_s": _mean([s.get("total_time") for s in samples]),
        "mean_rollout_working_s": _mean([s.get("working_time") for s in samples]),
        "status": data.get("status"),
        "exports": "an Inspect eval log (JSON): every sample's messages, tool calls, events, score",
    }


def _mean(values: list[Any]) -> float | None:
    known = [value for value in values if isinstance(value, int | float)]
    return sum(known) / len(known) if known else None


def _seconds(started: str | None, completed: str | None) -> float | None:
    from datetime import datetime

    if not started or not completed:
        return None
    return (datetime.fromisoformat(completed) - datetime.fromisoformat(started)).total_seconds()


def run_orlgen(chat_url: str, env_url: str, tasks: int, k: int, concurrency: int, scratch: Path) -> dict:
    work = scratch / "orlgen"
    work.mkdir()
    out = work / "rollouts.jsonl"
    command = [
        str(Path(sys.executable).with_name("orlgen")), "eval", str(REPO / "generated" / "helpdesk.py"),
        "--base-url", chat_url, "--model", "scripted", "-n", str(tasks), "-k", str(k), "--split", "test",
        "--concurrency", str(concurrency), "--env-url", env_url, "--format", "json", "--out", str(out),
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(command, cwd=work, env=child_env(), capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"orlgen eval failed ({done.returncode}): {done.stderr[-3000:]}")
    report = json.loads(done.stdout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    rewards = [row["reward"] if row["reward"] is not None else 0.0 for row in rows]
    return {
        "wall_s": wall,
        "rollouts": len(rows),
        "mean_reward": sum(rewards) / len(rewards),
        "rollouts_phase_s": report["wall_s"],
        "mean_rollout_s": _mean([row["timings"]["total_s"] for row in rows]),
        "status": "interrupted" if report["interrupted"] else "success",
        "exports": "the table (text or JSON) and one JSONL row per rollout: TRL conversational messages, tools, rewards",
    }


def measure(harness: str, run: Any, chat: Any, env_url: str) -> dict[str, Any]:
    """One harness's run, with the requests the model and the env received during it."""
    env_requests(env_url, reset=True)
    before = len(chat.requests)
    result = run()
    counts = env_requests(env_url)
    result.update(
        harness=harness,
        model_requests=len(chat.requests) - before,
        env_requests=counts["total"],
        env_by_path=counts["by_path"],
        rollouts_per_s=result["rollouts"] / result["wall_s"],
    )
    print(
        f"{harness:>8}: {result['wall_s']:6.1f} s end to end ({result['rollouts_per_s']:.2f} rollouts/s), "
        f"rollouts {result['rollouts']}, model requests {result['model_requests']}, "
        f"env requests {result['env_requests']}, mean reward {result['mean_reward']:.3f}, "
        f"rollouts phase {result['rollouts_phase_s']:.1f} s, mean rollout {result['mean_rollout_s']:.2f} s",
        flush=True,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    from orlgen.serve import ServerProcess

    from bench.chat_server import ChatServer, serving

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("-k", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the endpoint takes per request")
    parser.add_argument("--quick", action="store_true", help="4 tasks x 2 samples, to check the set-up")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks, args.k = 4, 2
    venv = inspect_venv()
    shape = (args.tasks, args.k, args.concurrency)
    with (
        child_environ(),
        ServerProcess("bench.served:Helpdesk", startup_timeout=120) as env_server,
        serving(ChatServer(helpdesk_policy, delay=args.latency)) as chat,
        tempfile.TemporaryDirectory(prefix="orlgen-bench-") as scratch,
    ):
        inspect_run = functools.partial(run_inspect, venv, chat.url, env_server.url, *shape, Path(scratch))
        orlgen_run = functools.partial(run_orlgen, chat.url, env_server.url, *shape, Path(scratch))
        runs = [
            measure("inspect", inspect_run, chat, env_server.url),
            measure("orlgen", orlgen_run, chat, env_server.url),
        ]
    inspect, orlgen = runs
    ratios = {
        "wall": orlgen["wall_s"] / inspect["wall_s"],
        "rollouts_phase": (orlgen["rollouts_phase_s"] or 0) / (inspect["rollouts_phase_s"] or 1),
        "model_requests": orlgen["model_requests"] / inspect["model_requests"],
        "env_requests": orlgen["env_requests"] / inspect["env_requests"],
        "mean_reward_difference": orlgen["mean_reward"] - inspect["mean_reward"],
    }
    print(
        f"orlgen / inspect: wall {ratios['wall']:.2f}x, rollouts phase {ratios['rollouts_phase']:.2f}x, "
        f"model requests {ratios['model_requests']:.2f}x, env requests {ratios['env_requests']:.2f}x, "
        f"mean reward {orlgen['mean_reward']:.3f} vs {inspect['mean_reward']:.3f}"
    )
    setup = {"tasks": args.tasks, "k": args.k, "concurrency": args.concurrency, "latency_s": args.latency,
             "env": "examples.helpdesk:Helpdesk (bench.served)", "pins": list(PINS)}  # fmt: skip
    RESULTS.write_text(json.dumps({"setup": setup, "runs": runs, "ratios": ratios}, indent=2) + "\n")
    print(f"results: {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
