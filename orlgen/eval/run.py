"""Many rollouts at once: plan them (tasks × k per split), preflight the environment, play them
on a pool of worker threads, report each as it finishes, and stop cleanly on Ctrl-C.

Workers are daemon threads: on Ctrl-C the main thread stops handing out rollouts, halts the
policy (a local model's generation must not outlive the interpreter), keeps what finished and
returns, and rollouts still in flight are abandoned (their sessions are deleted at exit by the
runtime, or reaped by the server).
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..runtime.episode import Episode
from .errors import Unreachable
from .policy import ChatEndpoint, Policy
from .rollout import POLICY_ERROR, Rollout, Settings, play, play_agent
from .subject import Member

PREFLIGHT_TIMEOUT = 30.0


@dataclass(frozen=True)
class Job:
    member: Member
    row: dict[str, Any]
    sample: int
    seed: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        """The `Rollout.key` of the rollout this job plays."""
        return (self.member.name, str(self.row.get("split")), int(self.row["task_index"]), self.sample)


@dataclass
class Finished:
    rollouts: list[Rollout]
    wall_s: float
    interrupted: bool


GIVE_UP_AFTER = 3  # rollouts whose model turn failed, none answered: the endpoint is not working


def model_never_answered(rollouts: list[Rollout]) -> bool:
    """Whether rollouts asked the model and not one turn was answered: no rollout could ask the
    model, so the run measures nothing but the endpoint's failure."""
    return any(r.outcome == POLICY_ERROR for r in rollouts) and not any(r.turns for r in rollouts)


def _give_up(rollouts: list[Rollout]) -> bool:
    failed = sum(r.outcome == POLICY_ERROR for r in rollouts)
    return failed >= GIVE_UP_AFTER and model_never_answered(rollouts)


def plan(members: list[Member], splits: tuple[str, ...], num_tasks: int | None, k: int, seed: int) -> list[Job]:
    """Every rollout of the run: for each environment and split, the first `num_tasks` tasks, k
    samples each, samples of one task next to each other (a GRPO group), seeds distinct."""
    jobs: list[Job] = []
    for member in members:
        for split in splits or (_default_split(member),):
            for row in member.rows(split, num_tasks):
                for sample in range(k):
                    jobs.append(Job(member, row, sample, seed + len(jobs)))
    return jobs


def _default_split(member: Member) -> str:
    return "test" if "test" in member.splits else "train" if "train" in member.splits else sorted(member.splits)[0]


def preflight(members: list[Member], env_url: str | None, env_overrides: Mapping[str, str] | None = None) -> None:
    """Raise `Unreachable` when an environment cannot be reached at all (one line, exit 2),
    rather than recording every rollout as an environment error."""
    for member in members:
        try:
            episode = Episode(member.spec, name=member.name, **episode_options(env_url, env_overrides))
        except Exception as exc:  # no address configured
            raise Unreachable(f"environment {member.name}: {exc}") from exc
        try:
            episode.check_reachable(PREFLIGHT_TIMEOUT)
        except ConnectionError as exc:
            raise Unreachable(f"environment {member.name} at {exc}") from exc


def episode_options(env_url: str | None, env_overrides: Mapping[str, str] | None) -> dict[str, Any]:
    """The options every episode of the run opens with: pointed at `env_url`, its sessions
    opened with `env_overrides` (`--env-override`), when given."""
    options: dict[str, Any] = {"base_url": env_url} if env_url else {}
    if env_overrides:
        options["env_overrides"] = dict(env_overrides)
    return options


def factory(member: Member, env_url: str | None, env_overrides: Mapping[str, str] | None = None) -> Callable[[], Any]:
    """The adapter class as training's `environment_factory`, with the run's `episode_options`."""
    adapter, options = member.adapter, episode_options(env_url, env_overrides)
    assert adapter is not None, "an agent module has no adapter class"
    return functools.partial(adapter, **options) if options else adapter


def execute(
    jobs: list[Job],
    policy: Policy,
    settings: Settings,
    *,
    concurrency: int,
    env_url: str | None,
    on_done: Callable[[Rollout], None],
    env_overrides: Mapping[str, str] | None = None,
) -> Finished:
    """Play `jobs` on `concurrency` threads; `on_done` runs in this thread, once per finished
    rollout, in the order they finish. The run stops early when the first few rollouts all
    failed to get any answer from the model: the rest would fail the same way."""
    pending: queue.Queue[Job] = queue.Queue()
    for job in jobs:
        pending.put(job)
    done: queue.Queue[Rollout] = queue.Queue()
    stop = threading.Event()
    trl = [job.member for job in jobs if job.member.adapter is not None]
    factories = {id(member): factory(member, env_url, env_overrides) for member in trl}
    reward_funcs = {id(job.member): job.member.reward_funcs() for job in jobs}
    options = episode_options(env_url, env_overrides)

    def worker() -> None:
        while not stop.is_set():
            try:
                job = pending.get_nowait()
            except queue.Empty:
                return
            key, member = id(job.member), job.member
            if member.adapter is None:  # an agent module: the agent loop, against the endpoint
                assert isinstance(policy, ChatEndpoint)  # `command` refuses a local model for one
                rollout = play_agent(
                    member.name, member.module.ENV, options, job.row, policy, settings, sample=job.sample, seed=job.seed
                )
            else:
                rollout = play(
                    member.name,
                    factories[key],
                    reward_funcs[key],
                    job.row,
                    policy,
                    settings,
                    sample=job.sample,
                    seed=job.seed,
                )
            done.put(rollout)

    start = time.perf_counter()
    for i in range(max(1, min(concurrency, len(jobs)))):
        threading.Thread(target=worker, name=f"orlgen-eval-{i}", daemon=True).start()
    finished: list[Rollout] = []
    try:
        while len(finished) < len(jobs):
            try:
                rollout = done.get(timeout=0.2)  # short waits keep Ctrl-C responsive
            except queue.Empty:
                continue
            finished.append(rollout)
            on_done(rollout)
            if _give_up(finished):
                stop.set()
                break
    except KeyboardInterrupt:
        stop.set()
        policy.halt()  # a local model stops generating before the interpreter exits
        return Finished(in_plan_order(finished, jobs), time.perf_counter() - start, interrupted=True)
    return Finished(in_plan_order(finished, jobs), time.perf_counter() - start, interrupted=False)


def in_plan_order(rollouts: list[Rollout], jobs: list[Job]) -> list[Rollout]:
    """Finished rollouts in the order they were planned (they finish in any order)."""
    position = {job.key: i for i, job in enumerate(jobs)}
    return sorted(rollouts, key=lambda rollout: position[rollout.key])
