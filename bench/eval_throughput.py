"""`python -m bench.eval_throughput [--quick]`: `orlgen eval`'s throughput on the slow env
(`bench.slow_env`: setup 1 s, each tool call 200 ms, 3 tool turns), at concurrency 1, 8 and 32.

The policy is a scripted OpenAI-compatible endpoint on loopback (`bench.chat_server`: it calls
`run` three times, then answers), so what is measured is eval's own machinery plus the env: one
rollout can take no less than one setup plus three tool latencies (the floor), and C rollouts at
once can at best finish C per floor. Each concurrency runs 4 waves' worth of rollouts (k = 4
samples per task); only the rollouts are timed, not start-up.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import QUIET_ENV, REPO, child_env, write_json

os.environ.update(QUIET_ENV)  # before anything imports openreward

TURNS = 3
WAVES = 4
K = 4


def run_three_commands(body: dict[str, Any]) -> dict[str, Any]:
    from bench.chat_server import answer, call, turn_of

    turn = turn_of(body)
    return call("run", {"command": f"step {turn}"}, turn) if turn < TURNS else answer("done")


@contextmanager
def chat_endpoint() -> Iterator[str]:
    """The scripted endpoint in a child process, as a real one is: it must not share this
    process's interpreter lock with the rollouts being measured."""
    command = [sys.executable, "-m", "bench.chat_server", "bench.eval_throughput:run_three_commands"]
    child = subprocess.Popen(
        command, cwd=REPO, env=child_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        yield child.stdout.readline().strip()
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def measure(
    module_path: Path, chat_url: str, env_url: str, concurrency: int, waves: int = WAVES, k: int = K
) -> dict[str, Any]:
    from orlgen.eval.policy import ChatEndpoint
    from orlgen.eval.rollout import Settings
    from orlgen.eval.run import execute, plan
    from orlgen.eval.subject import load

    members = load(str(module_path))
    jobs = plan(members, ("train",), concurrency * waves // k, k, seed=0)
    finished = execute(
        jobs,
        ChatEndpoint(chat_url, "scripted"),
        Settings(),
        concurrency=concurrency,
        env_url=env_url,
        on_done=lambda r: None,
    )
    rewards = [rollout.reward for rollout in finished.rollouts]
    if rewards != [1.0] * len(jobs):
        raise RuntimeError(f"unscored rollouts: {[r.reason for r in finished.rollouts if r.reward is None][:3]}")
    mean_latency = sum(r.timings["total_s"] for r in finished.rollouts) / len(finished.rollouts)
    return {
        "concurrency": concurrency,
        "rollouts": len(jobs),
        "wall_s": finished.wall_s,
        "mean_rollout_s": mean_latency,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_throughput", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="0.1 s setup, 20 ms tools")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from bench.slow import delays, floor_s, generated_module, slow_server

    setup_s, tool_s = delays(args.quick)
    floor = floor_s(setup_s, tool_s)
    results = []
    with tempfile.TemporaryDirectory() as tmp, slow_server(setup_s, tool_s) as env_url:
        generated_module(Path(tmp))
        with chat_endpoint() as chat_url:
            measure(Path(tmp) / "slow.py", chat_url, env_url, 1, waves=1, k=1)  # warm-up: imports, drift check
            for concurrency in (1, 8, 32):
                print(f"concurrency {concurrency} ...", file=sys.stderr, flush=True)
                result = measure(Path(tmp) / "slow.py", chat_url, env_url, concurrency)
                result["rollouts_per_s"] = result["rollouts"] / result["wall_s"]
                result["floor_rollouts_per_s"] = concurrency / floor
                results.append(result)
    print(f"slow env: setup {setup_s:g} s, tool {tool_s:g} s, {TURNS} tool turns; floor {floor:g} s per rollout")
    print("| concurrency | rollouts | wall | rollouts/s | floor rollouts/s | of floor | mean rollout |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        share = r["rollouts_per_s"] / r["floor_rollouts_per_s"]
        print(
            f"| {r['concurrency']} | {r['rollouts']} | {r['wall_s']:.2f} s | {r['rollouts_per_s']:.2f} "
            f"| {r['floor_rollouts_per_s']:.2f} | {100 * share:.0f}% | {r['mean_rollout_s']:.2f} s |"
        )
    if args.out:
        write_json(args.out, {"setup_s": setup_s, "tool_s": tool_s, "floor_s": floor, "runs": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
