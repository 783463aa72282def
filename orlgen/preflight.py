"""`orlgen preflight`: how many sessions a training run will hold open against its environment,
per process and for the run, before it starts (and whether a session budget can serve it).

The rules, from TRL 1.16's code and measured (tests/test_ranks.py):
- GRPOTrainer, on each of `world_size` processes: a generation batch gives a process
  `per_device_batch * steps_per_generation` rows; it resets all of them (one session each)
  before any rollout ends, and each session lives until its rollout is scored. So a process
  holds that many at once. With prefetch, the first group may open up to `prefetch` sessions
  for the `rows_per_process(...)` rows of a group it has, the difference deleted unused.
  A budget share smaller than a process's rows cannot work: the rows past it wait for a slot
  that no rollout of the batch gives back before it is scored.
- AsyncGRPOTrainer: one rollout worker, in one process, holds one session per rollout in
  flight: `max_inflight_tasks`, by default `max(max_staleness, 1) * per_device_batch *
  gradient_accumulation * world_size`. A budget below that only makes rollouts wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orlgen.errors import OrlgenError
from orlgen.runtime.session import budget
from orlgen.runtime.session.prefetch import rows_per_process

# "trainer" names a generation target (trl, verifiers, skyrl) everywhere else in orlgen; here the
# question is which of TRL's two rollout loops drives the env: GRPOTrainer's (sync) or
# AsyncGRPOTrainer's (async).
Loop = Literal["sync", "async"]


class PreflightError(OrlgenError, ValueError):
    """The trainer's settings cannot describe a run."""


@dataclass(frozen=True)
class Plan:
    loop: Loop
    processes_with_sessions: int
    per_process: int  # peak sessions one such process holds
    run: int  # peak for the run
    shares: tuple[int, ...] | None  # each rank's budget share, when a budget is set
    problem: str | None  # why the budget cannot serve the run, if it cannot
    notes: tuple[str, ...]


def plan(
    loop: Loop,
    world_size: int,
    per_device_batch: int,
    num_generations: int,
    *,
    steps_per_generation: int = 1,
    gradient_accumulation: int = 1,
    prefetch: int = 0,
    max_inflight: int | None = None,
    max_staleness: int = 4,
    max_sessions: int | None = None,
) -> Plan:
    for name, value in (
        ("world size", world_size),
        ("per-device batch", per_device_batch),
        ("num generations", num_generations),
        ("steps per generation", steps_per_generation),
        ("gradient accumulation", gradient_accumulation),
    ):
        if value < 1:
            raise PreflightError(f"the {name} must be at least 1, not {value}")
    if loop == "sync":
        return _grpo(world_size, per_device_batch, num_generations, steps_per_generation, prefetch, max_sessions)
    inflight = max_inflight or max(max_staleness, 1) * per_device_batch * gradient_accumulation * world_size
    notes = ["one rollout worker (on rank 0) runs every rollout; other ranks open no session"]
    if max_sessions is not None and max_sessions < inflight:
        notes.append(f"the budget ({max_sessions}) is below the {inflight} rollouts in flight: rollouts wait for slots")
    peak = min(inflight, max_sessions) if max_sessions is not None else inflight
    return Plan("async", 1, peak, peak, (max_sessions,) if max_sessions else None, None, tuple(notes))


def _grpo(world: int, batch: int, generations: int, steps: int, prefetch: int, limit: int | None) -> Plan:
    rows = batch * steps
    if (rows * world) % generations:
        raise PreflightError(
            f"the generation batch ({batch} x {steps} x {world} = {rows * world}) is not a multiple of "
            f"num_generations ({generations}), which GRPOTrainer requires"
        )
    group = rows_per_process(generations, batch, steps)
    extra = max(0, prefetch - group) if prefetch > 1 else 0
    notes = [f"each process resets {rows} rows per generation batch, {group} of them per task"]
    if extra:
        notes.append(
            f"prefetch={prefetch} opens {extra} more than a group's {group} rows on a process's first group "
            f"(then it learns); pass prefetch={group}"
        )
    per_process = rows + extra
    shares, problem = None, None
    if limit is not None:
        if limit < world:
            problem = f"the budget ({limit}) is smaller than the {world} processes"
        else:
            shares = tuple(budget.share(limit, world, rank) for rank in range(world))
            if min(shares) < rows:
                problem = (
                    f"a process's share ({min(shares)}) is below the {rows} sessions GRPOTrainer holds per process: "
                    f"its rollouts past the share wait until their timeout; set the budget to at least {rows * world} "
                    "or lower per_device_train_batch_size"
                )
        per_process = min(per_process, max(shares)) if shares else per_process
    run = sum(min(rows + extra, share) for share in shares) if shares else per_process * world
    return Plan("sync", world, per_process, run, shares, problem, tuple(notes))


def render(result: Plan) -> str:
    lines = [
        f"trainer: {'GRPOTrainer' if result.loop == 'sync' else 'AsyncGRPOTrainer'}",
        f"processes opening sessions: {result.processes_with_sessions}",
        f"peak sessions per process: {result.per_process}",
        f"peak sessions for the run: {result.run}",
    ]
    if result.shares is not None:
        lines.append(f"budget share per rank: {', '.join(str(share) for share in result.shares)}")
    lines += [f"note: {note}" for note in result.notes]
    if result.problem:
        lines.append(f"problem: {result.problem}")
    return "\n".join(lines) + "\n"
