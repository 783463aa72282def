"""`python -m bench.agent_loop [--episodes N] [--out FILE]`: one helpdesk episode played three
ways, on the same servers in one run.

- `eval-before`: `orlgen eval`'s TRL loop as of commit 5b8d87d (before the agent trainer; eval's
  endpoint client was then the blocking `orlgen/eval/bounded_http.py`): a git worktree of that
  commit in a temp dir, its `orlgen` and its `generated/helpdesk.py`;
- `eval-now`: the same code path in this tree (`ChatEndpoint` is now the agent loop's client);
- `agent`: `asyncio.run(helpdesk_agent.run_episode(row, base_url=..., model="scripted",
  env={"base_url": ...}))`, the agent module of this tree.

The eval sides run `orlgen.eval.rollout.play(...)` with the module's adapter pointed at the server
(`orlgen.eval.run.factory`), its `reward_funcs`, `ChatEndpoint(url, "scripted")` and `Settings()`,
as `orlgen eval` does for one rollout. Each side is a child process (`--side`, this module run
with the tree's directory first on `sys.path`; it reports where its `orlgen` came from) that plays
one episode per command on stdin, so start-up is paid once and not measured; each plays one
warm-up episode on a task outside the measured ones first.

The env is `bench.served:Helpdesk` (a real ORS server counting requests: `bench.served`); the
model is a scripted OpenAI-compatible endpoint in a child process (`bench.chat_server`'s server,
run by `--chat`, which also counts the completions it answers and the TCP connections they come
on): the example's own solution of the ticket in the prompt (`examples.helpdesk.scripted_solution`),
then a closing answer, the same for every side. Episode i plays train task i on every side, the sides' order rotating every episode.
Per side: median wall per episode (in the child), client CPU per episode (`time.process_time()`
of the child, summed over the episodes, / N), requests per episode to the env and to the
endpoint, model turns and the mean reward (the same on every side: they play the same episodes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.chat_server import ChatServer, answer, call, serving, turn_of
from bench.common import (
    QUIET_ENV,
    REPO,
    LineChild,
    Paired,
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

BEFORE = "5b8d87d"  # the tree before the agent trainer
SIDES = ("eval-before", "eval-now", "agent")
EPISODES = 100  # the whole run, start-up and worktree included: about 30 s on 2 CPUs
SPLIT = "train"


# ── the policy (in the endpoint's process) ──────────────────────────────────────────────


_TICKETS: dict[str, dict[str, Any]] = {}


def helpdesk_script(body: dict[str, Any]) -> dict[str, Any]:
    """The example's solution of the ticket in the prompt, a call per turn, then an answer."""
    from examples.helpdesk import make_task, scripted_solution

    if not _TICKETS:
        _TICKETS.update({s["ticket_id"]: s for s in (make_task(SPLIT, index) for index in range(300))})
    ticket = re.search(r"Support ticket (\S+)", json.dumps(body["messages"]))
    if ticket is None or ticket.group(1) not in _TICKETS:
        return answer("I cannot help with that.")
    steps = scripted_solution(_TICKETS[ticket.group(1)])
    turn = turn_of(body)
    if turn >= len(steps):
        return answer("The ticket is resolved.")
    name, arguments = steps[turn]
    return call(name, arguments, turn)


def serve_chat() -> int:
    """`--chat`: the scripted endpoint; prints its URL, then for each line on stdin one JSON line:
    the completions it answered and the TCP connections they came on since the last line (and
    starts counting afresh); ends with stdin."""
    with serving(CountingChat()) as server:
        print(server.url, flush=True)
        for _ in sys.stdin:
            count, connections = len(server.requests), len(server.clients)
            del server.requests[:count]
            server.clients.clear()
            print(json.dumps({"completions": count, "connections": connections}), flush=True)
    return 0


class CountingChat(ChatServer):
    """`bench.chat_server`'s server, scripted by `helpdesk_script`, also counting the client
    (host, port) pairs requests come from: one per TCP connection, as `bench.served` counts."""

    def __init__(self) -> None:
        super().__init__(helpdesk_script)
        self.clients: set[tuple[str, int]] = set()

    def app(self) -> Any:
        inner = super().app()

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope.get("client"):
                self.clients.add(tuple(scope["client"]))
            await inner(scope, receive, send)

        return app


# ── one side (a child process) ──────────────────────────────────────────────────────────


def run_side(side: str, tree: Path, chat_url: str, env_url: str, tasks: int) -> int:
    """`--side`: load the side's module from `tree`, then play one episode per line on stdin
    (a task index), answering one JSON line each."""
    if "orlgen" in sys.modules:
        raise RuntimeError("orlgen was imported before the tree was put first on sys.path")
    sys.path.insert(0, str(tree))
    import orlgen
    from orlgen.eval.subject import load

    name = "helpdesk_agent.py" if side == "agent" else "helpdesk.py"
    (member,) = load(str(tree / "generated" / name))
    rows = member.rows(SPLIT, tasks)
    episode = _agent_episode(member, chat_url, env_url) if side == "agent" else _eval_episode(member, chat_url, env_url)
    ready = {"orlgen": orlgen.__file__, "module": member.module.__file__, "rows": [r["task_index"] for r in rows]}
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        index = int(line)
        cpu, started = time.process_time(), time.perf_counter()
        result = episode(rows[index], index)
        result.update(wall_s=time.perf_counter() - started, cpu_s=time.process_time() - cpu)
        print(json.dumps(result), flush=True)
    return 0


def _eval_episode(member: Any, chat_url: str, env_url: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """One rollout as `orlgen eval` plays it (`orlgen.eval.run.execute`'s worker, one job)."""
    from orlgen.eval.policy import ChatEndpoint
    from orlgen.eval.rollout import Settings, play
    from orlgen.eval.run import factory

    make, reward_funcs, endpoint = factory(member, env_url), member.reward_funcs(), ChatEndpoint(chat_url, "scripted")

    def episode(row: dict[str, Any], index: int) -> dict[str, Any]:
        rollout = play(member.name, make, reward_funcs, row, endpoint, Settings(), sample=0, seed=index)
        return {
            "reward": rollout.reward,
            "outcome": rollout.outcome,
            "reason": rollout.reason,
            "turns": rollout.turns,
            "tool_calls": rollout.tool_calls,
        }

    return episode


def _agent_episode(member: Any, chat_url: str, env_url: str) -> Callable[[dict[str, Any], int], dict[str, Any]]:
    """One episode as a trainer plays it through the agent module's `run_episode`."""
    module = member.module

    def episode(row: dict[str, Any], index: int) -> dict[str, Any]:
        trajectory = asyncio.run(
            module.run_episode(row, base_url=chat_url, model="scripted", env={"base_url": env_url})
        )
        return {
            "reward": trajectory.reward,
            "outcome": trajectory.outcome,
            "reason": trajectory.state.error if trajectory.state else None,
            "turns": int(trajectory.metrics.get("turns", 0)),
            "tool_calls": int(trajectory.metrics.get("tool_calls", 0)),
        }

    return episode


# ── the run (the parent) ────────────────────────────────────────────────────────────────


def spawn(args: list[str], env: dict[str, str]) -> LineChild:
    """This bench in a child process (`--chat`, or `--side ...`), spoken to in lines."""
    return LineChild([sys.executable, "-m", "bench.agent_loop", *args], env)


@contextmanager
def before_tree() -> Iterator[Path | None]:
    """A worktree of `BEFORE` in a temp dir (removed on exit), or None when git cannot make one."""
    parent = Path(tempfile.mkdtemp(prefix="orlgen-bench-before-"))
    tree = parent / "tree"
    made = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), BEFORE], capture_output=True, text=True
    )
    try:
        if made.returncode != 0:
            log(f"no worktree of {BEFORE} ({made.stderr.strip()}): measuring eval-now and agent only")
            yield None
        else:
            yield tree
    finally:
        if made.returncode == 0:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], capture_output=True)
        shutil.rmtree(parent, ignore_errors=True)


def measure(episodes: int) -> dict[str, Any]:
    with before_tree() as before, servers(Served("bench.served:Helpdesk")) as (helpdesk,):
        trees = {"eval-before": before, "eval-now": REPO, "agent": REPO}
        sides = [side for side in SIDES if trees[side] is not None]
        chat = spawn(["--chat"], child_env())
        children: dict[str, LineChild] = {}
        try:
            chat_url = chat.read()
            for side in sides:
                tree = trees[side]
                assert tree is not None
                args = ["--side", side, "--tree", str(tree), "--chat-url", chat_url, "--env-url", helpdesk.url]
                env = child_env(PYTHONPATH=os.pathsep.join([str(tree), str(REPO)]))
                children[side] = spawn([*args, "--tasks", str(episodes + 1)], env)
            ready = {side: json.loads(child.read()) for side, child in children.items()}
            if len({json.dumps(r["rows"]) for r in ready.values()}) != 1:
                raise RuntimeError(f"the sides would play different tasks: {ready}")
            log("sides ready: " + ", ".join(f"{s} (orlgen from {r['orlgen']})" for s, r in ready.items()))
            for side, child in children.items():  # warm-up: the last task, not measured
                warm = json.loads(child.ask(str(episodes)))
                log(f"warm-up {side}: reward {warm['reward']}, {warm['wall_s'] * 1000:.0f} ms")
            chat.ask("reset")  # the warm-ups' completions
            samples: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for i in range(episodes):
                for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
                    helpdesk.reset_requests()
                    got = json.loads(children[side].ask(str(i)))
                    counts, endpoint = settled(helpdesk), json.loads(chat.ask("count"))
                    got.update(
                        env_requests=counts["total"],
                        env_connections=counts["connections"],
                        by_path=counts["by_path"],
                        chat_requests=endpoint["completions"],
                        chat_connections=endpoint["connections"],
                    )
                    samples[side].append(got)
                if (i + 1) % 10 == 0:
                    log(f"{i + 1}/{episodes} episodes per side")
        finally:
            for child in [*children.values(), chat]:
                child.close()
    return {"sides": sides, "ready": ready, "samples": samples}


def settled(served: Served, timeout: float = 2.0) -> dict[str, Any]:
    """The env's counts once the episode's `/delete_session` arrived: orlgen sends it in the
    background, so it may land after the episode returned; waiting keeps it out of the next
    episode's counts (this wait is not in the episode's wall, measured in the child)."""
    deadline = time.monotonic() + timeout
    while True:
        counts = served.requests()
        if counts["by_path"].get("POST /delete_session") or time.monotonic() > deadline:
            return counts
        time.sleep(0.002)


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(samples)
    by_path: Counter[str] = Counter()
    for s in samples:
        by_path.update(s["by_path"])
    rewards = [s["reward"] for s in samples]
    return {
        "episodes": n,
        "median_wall_s": median([s["wall_s"] for s in samples]),
        "cpu_s_per_episode": sum(s["cpu_s"] for s in samples) / n,
        "env_requests_per_episode": sum(s["env_requests"] for s in samples) / n,
        "env_connections_per_episode": sum(s["env_connections"] for s in samples) / n,
        "chat_requests_per_episode": sum(s["chat_requests"] for s in samples) / n,
        "chat_connections_per_episode": sum(s["chat_connections"] for s in samples) / n,
        "turns_per_episode": sum(s["turns"] for s in samples) / n,
        "tool_calls_per_episode": sum(s["tool_calls"] for s in samples) / n,
        "reward_mean": sum(r for r in rewards if r is not None) / n,
        "unscored": sum(r is None for r in rewards),
        "outcomes": dict(Counter(s["outcome"] for s in samples)),
        "env_by_path_per_episode": {path: count / n for path, count in sorted(by_path.items())},
    }


def ratios(samples: dict[str, list[dict[str, Any]]], side: str, base: str) -> dict[str, Any]:
    """`side` / `base` per metric: of medians (wall), of means (the rest); and the median of the
    per-episode wall ratios (episode i of both sides: a pair)."""
    wall = Paired([s["wall_s"] for s in samples[side]], [s["wall_s"] for s in samples[base]]).summary()
    a, b = summarise(samples[side]), summarise(samples[base])
    return {
        "wall_ratio_of_medians": wall["ratio_of_medians"],
        "wall_median_pair_ratio": wall["median_pair_ratio"],
        **{
            key: a[key] / b[key] if b[key] else None
            for key in ("cpu_s_per_episode", "env_requests_per_episode", "chat_requests_per_episode")
        },
    }


def table(summary: dict[str, dict[str, Any]], compared: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| side | episodes | median wall / episode | client CPU / episode | env requests (connections) / episode "
        "| endpoint requests (connections) / episode | model turns | reward mean |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, s in summary.items():
        lines.append(
            f"| {side} | {s['episodes']} | {s['median_wall_s'] * 1000:.1f} ms | {s['cpu_s_per_episode'] * 1000:.1f} ms "
            f"| {s['env_requests_per_episode']:.2f} ({s['env_connections_per_episode']:.2f}) "
            f"| {s['chat_requests_per_episode']:.2f} ({s['chat_connections_per_episode']:.2f}) "
            f"| {s['turns_per_episode']:.2f} | {s['reward_mean']:.3f} |"
        )
    if compared:
        lines += [
            "",
            "| ratio | wall (of medians) | wall (median of pairs) | client CPU | env requests | endpoint requests |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, r in compared.items():
            cells = [r["wall_ratio_of_medians"], r["wall_median_pair_ratio"]]
            cells += [r["cpu_s_per_episode"], r["env_requests_per_episode"], r["chat_requests_per_episode"]]
            lines.append(f"| {name} | " + " | ".join("-" if c is None else f"{c:.2f}" for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent_loop", description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=EPISODES, help=f"episodes per side (default {EPISODES})")
    parser.add_argument("--out", type=Path, help="also write the results (samples included) as JSON here")
    parser.add_argument("--chat", action="store_true", help=argparse.SUPPRESS)  # the endpoint child
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a side's child, with:
    parser.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--chat-url", help=argparse.SUPPRESS)
    parser.add_argument("--env-url", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.chat:
        return serve_chat()
    if args.side:
        return run_side(args.side, args.tree, args.chat_url, args.env_url, args.tasks)

    started, load_at_start = time.perf_counter(), os.getloadavg()
    measured = measure(args.episodes)
    samples = measured["samples"]
    summary = {side: summarise(samples[side]) for side in measured["sides"]}
    compared = {
        f"{side} / eval-before": ratios(samples, side, "eval-before")
        for side in ("agent", "eval-now")
        if "eval-before" in samples
    }
    if "eval-before" not in samples:
        compared["agent / eval-now"] = ratios(samples, "agent", "eval-now")
    elapsed = time.perf_counter() - started
    print(table(summary, compared))
    print(
        f"\n{args.episodes} episodes per side in {elapsed:.0f} s (load average {load_at_start[0]:.2f} at start, "
        f"{os.getloadavg()[0]:.2f} at the end, {os.cpu_count()} CPUs)"
    )
    if args.out:
        write_json(
            args.out,
            {
                **run_record(elapsed, load_at_start),
                "versions": versions(),
                "before": BEFORE,
                "ready": measured["ready"],
                "summary": summary,
                "ratios": compared,
                "samples": samples,
            },
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
