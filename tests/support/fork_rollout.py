"""Rollouts across a fork, in a fresh interpreter: `python -m tests.support.fork_rollout [URL]`,
cwd the repo.

The parent fills every per-process state of the runtime with real rollouts of generated/echo.py
(against URL, or no URL: the adapter serves `examples.echo:Echo` itself) and keeps one session
open. It forks a child that exits at once, and plays again on its pooled connection. Then a
thread of it holds every per-process lock while it forks again: that child reports which states
it found fresh, plays rollouts of its own (one with an adapter it inherited), and exits normally
(atexit hooks, interpreter teardown); the parent finishes the session it kept and plays again.
One JSON object on stdout: `populated` (the parent's states before the forks), `stale` (the
child's states that were not fresh), and the rollouts' rewards and outcomes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import os
import pkgutil
import sys
import threading
from typing import Any

import orlgen.runtime
from orlgen.runtime import child_secrets, log, process
from orlgen.runtime.agent import AgentEnv, Tool
from orlgen.runtime.agent.loop import play
from orlgen.runtime.coverage import COVERAGE
from orlgen.runtime.episode import DeploymentChanged, Episode, _live
from orlgen.runtime.session import backoff
from orlgen.runtime.session.metrics import COUNTERS
from orlgen.runtime.trl.scoring import scoring_metrics, submit_final_message

from examples.echo import TARGETS
from generated.echo import SPEC, EchoEnv, EchoParams

URL = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
LOCK = type(threading.Lock())


def runtime_modules() -> list[Any]:
    """Every module of the runtime this interpreter can import (verifiers and skyrl need theirs)."""
    modules = []
    for info in pkgutil.walk_packages(orlgen.runtime.__path__, "orlgen.runtime."):
        try:
            modules.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:
            if (exc.name or "").startswith("orlgen"):
                raise
    return modules


def names() -> dict[int, str]:
    """Each declared state's name under `orlgen.runtime` (`session.budget._budgets`)."""
    found = {
        id(value): f"{module.__name__.removeprefix('orlgen.runtime.')}.{name}"
        for module in runtime_modules()
        for name, value in vars(module).items()
    }
    return {id(state): found.get(id(state), f"<unnamed {type(state).__name__}>") for state in process.declared()}


def rollout(env: EchoEnv, index: int) -> tuple[float | None, str]:
    env.reset(split="train", task_index=index)
    env.echo(text=TARGETS[index])
    return env.get_reward(), env.outcome


def populate() -> EchoEnv:
    """Real rollouts that leave something in every per-process state; returns an adapter whose
    session is still open."""
    hooks = {"log_metric": lambda *_: None, "log_extra": lambda *_: None}  # TRL's, to reward functions
    scoring_metrics(environments=[EchoEnv(base_url=URL)], **hooks)  # the batch logged last
    assert rollout(EchoEnv(base_url=URL), 0) == (1.0, "finished")
    drawn = EchoEnv(base_url=URL)  # a row naming no task: the split's size and the seeded walk
    drawn.reset()
    drawn.get_reward()
    ahead = EchoEnv(base_url=URL, prefetch=2)  # task 2's spare is dropped at task 3: a run learned
    rollout(ahead, 2)
    ahead.reset(split="train", task_index=3)
    Episode(SPEC, base_url=URL)  # an episode of no class: its missing-secrets key
    submit_final_message(completions=[[]])  # no environments: the once-per-process warning
    log.log_once("fork", "a line logged once per process")
    os.environ["FORK_JUDGE_API_KEY"] = "fork-key"  # a verifiers host hands its secrets over in a file
    child_secrets.write(["FORK_JUDGE_API_KEY"])
    refuse_another_deployment()
    assert agent_rollout(0) == 1.0  # the agent loop's episode pool
    held = EchoEnv(base_url=URL)
    held.reset(split="train", task_index=1)
    return held


def agent_rollout(index: int) -> float | None:
    """One episode of the agent loop, its model a script: echo the target, then stop."""
    env = AgentEnv(SPEC, "Echo", tools=[], calls={"echo": Tool("echo", EchoParams)})

    async def model(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        call = {
            "id": "c",
            "type": "function",
            "function": {"name": "echo", "arguments": json.dumps({"text": TARGETS[index]})},
        }
        return {"message": {"role": "assistant", "content": None, "tool_calls": [call]}}

    return asyncio.run(play(env, index, model, max_turns=1, episode_options={"base_url": URL})).reward


class PinnedEchoEnv(EchoEnv, spec=dataclasses.replace(SPEC, deployment={"build_sha": "another-build"})):
    """The echo env pinned to a deployment the server is not (it reports no build)."""


def refuse_another_deployment() -> None:
    """A class refused for its deployment, a refusal kept for the rest of the process (not on a
    server without `/version`, such as ors-sdk's: nothing there tells a deployment apart)."""
    try:
        PinnedEchoEnv(base_url=URL, on_deployment_change="refuse").reset(split="train", task_index=0)
    except DeploymentChanged:
        pass


def filled(state: Any) -> bool | None:
    """Whether a state holds something (None: a lock or a generator, which hold nothing)."""
    if isinstance(state, LOCK) or state is backoff._random:
        return None
    if state is COUNTERS or state is COVERAGE:
        return any(state._raw.values()) if state is COUNTERS else state.rollouts > 0
    if state is _live:
        return any(episode.open for episode in state)
    return len(state) > 0


def fresh(state: Any, parent_random: object) -> bool:
    """Whether a child's state is its own: free, empty, zeroed, reseeded, holding no session."""
    if isinstance(state, LOCK):
        return not state.locked()
    if state is backoff._random:
        return state.getstate() != parent_random
    if state is _live:
        return all(episode._session is None and not episode.open for episode in state)
    return not filled(state)


def hold_locks() -> threading.Event:
    """A thread holding every per-process lock (and the counters' own) until the returned event."""
    locks = [state for state in process.declared() if isinstance(state, LOCK)] + [COUNTERS._lock, COVERAGE._lock]
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in locks:
            lock.acquire()
        held.set()
        done.wait()
        for lock in locks:
            lock.release()

    threading.Thread(target=hold, daemon=True).start()
    held.wait()
    return done


def child(held: EchoEnv, parent_random: object, out: int) -> None:
    named = names()
    report: dict[str, Any] = {
        "stale": sorted(named[id(state)] for state in process.declared() if not fresh(state, parent_random)),
        "unnamed": sorted(name for name in named.values() if name.startswith("<")),
    }
    if report["stale"]:  # a lock still held would hang the rollouts: report instead
        os.write(out, json.dumps(report).encode())
        os._exit(1)
    report["rollout"] = rollout(EchoEnv(base_url=URL), 4)
    report["inherited_adapter"] = rollout(held, 5)  # its parent's session is left alone
    os.write(out, json.dumps(report).encode())
    os.close(out)


def main() -> None:
    held = populate()
    bare = os.fork()
    if bare == 0:
        return  # a child that exits at once: its interpreter's teardown must leave our connections alone
    os.waitpid(bare, 0)
    after_bare = rollout(EchoEnv(base_url=URL), 7)  # on the connection the parent pooled
    named = names()
    populated = {named[id(state)]: filled(state) for state in process.declared()}
    parent_random = backoff._random.getstate()
    read, write = os.pipe()
    done = hold_locks()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        child(held, parent_random, write)
        return  # the child exits as any interpreter does: atexit hooks, then teardown
    done.set()
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        report = json.loads(pipe.read() or b"{}")
    _, status = os.waitpid(pid, 0)
    report["child_exit"] = os.waitstatus_to_exitcode(status)
    report["populated"] = populated
    report["after_bare_child"] = after_bare
    held.echo(text=TARGETS[1])  # the session kept across the fork: the child deleted none of ours
    report["after"] = {"held": (held.get_reward(), held.outcome), "new": rollout(EchoEnv(base_url=URL), 6)}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
