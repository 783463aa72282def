"""`python -m bench.verl_calls [--calls N] [--block N] [--out FILE]`: what a tool call costs
through the verl module, beside the TRL module's method, on the same server in one run.

- `trl`: `HelpdeskEnv(base_url=...)` of generated/helpdesk.py, a session open on train task 0
  (`reset`), the tool's method called (`list_policies()`, `get_order(order_id=...)`); in the main
  venv, a child of this module (`--side trl`);
- `verl`: verl 0.9.1's own `ToolAgentLoop._call_tool` (a `MagicMock(spec=ToolAgentLoop)` with the
  real method bound, as verl's test_call_tool_on_cpu.py drives it) into the generated
  `HelpdeskVerlTool.execute` (generated/helpdesk_verl.py, its tools loaded from
  generated/helpdesk_verl_tools.yaml by verl's `initialize_tools_from_config`), the trajectory's
  episode registered under its request id, its session open on train task 0; in the verl venv
  (`tests/support/framework_venvs.py`'s `verl_python()`), `bench/verl_calls_child.py` run by path;
- `episode`: in that same verl child, the same episode's `Episode.call` directly: the path every
  orlgen trainer shares, so `verl` − `episode` is what verl's `_call_tool` and the shim's
  `OrsTool.execute` (argument check, the thread-pool hop of `blocking`, the `ToolResponse`) add.

The server is `bench.served:Helpdesk` (a real ORS server on loopback, TCP_NODELAY, counting
requests: every side's call is checked to be one `/call` request). Calls run in blocks of
--block per side, the sides' order rotating every block, until each side has made --calls calls
of each tool (after one untimed block each). Per tool and side: median and p90 µs per call, and
the ratio of medians to `trl`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import (
    QUIET_ENV,
    REPO,
    LineChild,
    Served,
    child_env,
    log,
    median,
    run_record,
    servers,
    versions,
    write_json,
)

os.environ.update(QUIET_ENV)  # before anything imports openreward

SIDES = ("trl", "verl", "episode")
ANSWER = "@@ "  # a child's answer lines start with this (bench/verl_calls_child.py writes the same)
CALLS, BLOCK = 600, 50


def tools(order_id: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Tool → (the TRL method's name, its keyword arguments); the model's JSON arguments are the same."""
    return {"list_policies": ("list_policies", {}), "get_order": ("get_order", {"order_id": order_id})}


def an_order_id() -> str:
    """The order of helpdesk's train task 0: `get_order` answers it in full."""
    from examples.helpdesk import make_task

    return str(make_task("train", 0)["order"]["order_id"])


# ── the TRL side (a child in the main venv) ─────────────────────────────────────────────


def run_trl_side(env_url: str) -> int:
    """`--side trl`: a session open on train task 0, then for each line `trl TOOL N [ARGUMENTS]`
    on stdin, N calls of the TOOL method, answering one JSON line."""
    from bench.loading import load_module

    module = load_module(REPO / "generated" / "helpdesk.py", "bench_verl_calls_helpdesk")
    env = module.HelpdeskEnv(base_url=env_url)
    env.reset(split="train", task_index=0)
    print(ANSWER + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        _, tool, count, *rest = line.split(maxsplit=3)
        arguments = json.loads(rest[0]) if rest else {}
        method = getattr(env, tool)
        times, answer = [], None
        for _ in range(int(count)):
            started = time.perf_counter()
            answer = method(**arguments)
            times.append(time.perf_counter() - started)
        print(ANSWER + json.dumps({"times": times, "answer": str(answer)[:80]}), flush=True)
    env.get_reward()
    return 0


# ── the run (the parent) ────────────────────────────────────────────────────────────────


class JsonChild(LineChild):
    """A side's child: its answers are JSON on lines marked `ANSWER`."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        super().__init__(args, env, answer_prefix=ANSWER)

    def read(self) -> Any:
        return json.loads(super().read())

    def ask(self, line: str) -> Any:
        return super().ask(line)  # its answer comes through `read`: parsed


def measure(calls: int, block: int) -> dict[str, Any]:
    from tests.support.framework_venvs import verl_python

    order_id = an_order_id()
    called = tools(order_id)
    python = verl_python()
    with servers(Served("bench.served:Helpdesk")) as (helpdesk,):
        trl = JsonChild(
            [sys.executable, "-m", "bench.verl_calls", "--side", "trl", "--env-url", helpdesk.url], child_env()
        )
        verl_env = {k: v for k, v in os.environ.items() if not k.startswith(("ORLGEN_", "PYTHON"))}
        verl_env.update(QUIET_ENV, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "generated")]))
        verl = JsonChild([str(python), str(REPO / "bench" / "verl_calls_child.py"), helpdesk.url], verl_env)
        children = {"trl": trl, "verl": verl, "episode": verl}
        samples: dict[str, dict[str, list[float]]] = {tool: {side: [] for side in SIDES} for tool in called}
        requests: dict[str, dict[str, float]] = {tool: {} for tool in called}
        answers: dict[str, dict[str, str]] = {tool: {} for tool in called}
        try:
            ready = {"trl": trl.read(), "verl": verl.read()}
            log(f"sides ready; verl's tools: {', '.join(ready['verl']['tools'])}")
            for tool, (_, arguments) in called.items():
                command = f"{tool} {block} {json.dumps(arguments)}"
                for side in SIDES:  # warm-up, untimed; and the requests one call makes
                    children[side].ask(f"{side} {command}")
                    with helpdesk.counting() as counts:
                        got = children[side].ask(f"{side} {command}")
                    requests[tool][side] = (
                        sum(n for path, n in counts["by_path"].items() if path.endswith("/call")) / block
                    )
                    answers[tool][side] = got["answer"]
                for i in range(max(1, calls // block)):
                    for side in SIDES[i % len(SIDES) :] + SIDES[: i % len(SIDES)]:
                        samples[tool][side] += children[side].ask(f"{side} {command}")["times"]
                log(f"{tool}: {len(samples[tool]['trl'])} calls per side")
        finally:
            trl.close()
            verl.close()
    return {"order_id": order_id, "samples": samples, "requests": requests, "answers": answers}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summarise(measured: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    found: dict[str, dict[str, dict[str, float]]] = {}
    for tool, sides in measured["samples"].items():
        base = median(sides["trl"])
        found[tool] = {
            side: {
                "n": len(times),
                "median_us": median(times) * 1e6,
                "p90_us": percentile(times, 0.9) * 1e6,
                "ratio_to_trl": median(times) / base,
                "requests_per_call": measured["requests"][tool][side],
            }
            for side, times in sides.items()
        }
    return found


def table(summary: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [
        "| tool | side | calls | median / call | p90 / call | ÷ trl (medians) | `/call` requests per call |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for tool, sides in summary.items():
        for side, s in sides.items():
            lines.append(
                f"| {tool} | {side} | {s['n']} | {s['median_us']:.0f} µs | {s['p90_us']:.0f} µs "
                f"| {s['ratio_to_trl']:.2f} | {s['requests_per_call']:.2f} |"
            )
        verl, episode = sides["verl"]["median_us"], sides["episode"]["median_us"]
        lines.append(f"| {tool} | verl − episode | | {verl - episode:.0f} µs | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verl_calls", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=CALLS, help=f"timed calls per side and tool (default {CALLS})")
    parser.add_argument("--block", type=int, default=BLOCK, help=f"calls per block (default {BLOCK})")
    parser.add_argument("--out", type=Path, help="also write the results (samples included) as JSON here")
    parser.add_argument("--side", choices=("trl",), help=argparse.SUPPRESS)  # the TRL side's child, with:
    parser.add_argument("--env-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        return run_trl_side(args.env_url)

    started, load_at_start = time.perf_counter(), os.getloadavg()
    measured = measure(args.calls, args.block)
    summary = summarise(measured)
    elapsed = time.perf_counter() - started
    print(table(summary))
    print(
        f"\n{elapsed:.0f} s in all (load average {load_at_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} at the "
        f"end, {os.cpu_count()} CPUs)"
    )
    for tool, sides in measured["answers"].items():
        log(f"{tool} answers: " + "; ".join(f"{side}: {text[:50]!r}" for side, text in sides.items()))
    if args.out:
        write_json(
            args.out,
            {
                **run_record(elapsed, load_at_start),
                "versions": versions(),
                "summary": summary,
                **measured,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
