"""Slow environments: where a trainer's time goes when sessions take seconds to open and tools
hundreds of milliseconds to answer (`bench.slow_env`).

For batches of 8, 32 and 64 rollouts of 3 tool turns, the env-time of one batch:
  (a) TRL's `OpenRewardSpec` binder in GRPOTrainer's order: every `reset` one after another, then
      each turn's tool calls one rollout after another (`_generate_and_score_completions`,
      `_tool_call_loop`, trl 1.16);
  (b) orlgen's generated adapter in the same serial order;
  (c) orlgen in AsyncGRPOTrainer's order: every rollout on a thread of a pool as large as the batch
      (the worker's `run_in_executor`), `reset`, 3 tools, `get_reward`;
  (d) orlgen in the serial order with `prefetch=8` (GRPO resets the same task `num_generations`
      times in a row; the first reset of a task opens the group's 8 sessions together);
next to the floor: one setup + three tool latencies. Model generation is left out on purpose: it
is the same for every binder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import child_environ
from bench.loading import load_module

TURNS = 3
CONCURRENT_REPS = 3
GENERATIONS = 8  # GRPO's num_generations: rollouts i*8 .. i*8+7 play task i


def delays(quick: bool) -> tuple[float, float]:
    """(setup, tool) seconds: a sandbox's 1 s and 200 ms, or `--quick`'s 0.1 s and 20 ms."""
    return (0.1, 0.02) if quick else (1.0, 0.2)


def floor_s(setup_s: float, tool_s: float) -> float:
    """The shortest a rollout can take: one setup plus the tool latencies of its turns."""
    return setup_s + TURNS * tool_s


@contextmanager
def slow_server(setup_s: float, tool_s: float, entry: str = "orlgen.serve") -> Iterator[str]:
    """The slow env served by a child (`python -m ENTRY`) with these delays; the delays stay in
    `os.environ` inside the block, for an in-process capture of the env too."""
    from orlgen.serve import ServerProcess

    with (
        child_environ(ORLGEN_SLOW_SETUP_S=str(setup_s), ORLGEN_SLOW_TOOL_S=str(tool_s)),
        ServerProcess("bench.slow_env:Slow", entry=entry, startup_timeout=120) as server,
    ):
        yield server.url


def generated_module(out: Path) -> Any:
    """Capture the slow env (served in-process) and import its generated module."""
    from orlgen.capture.live import capture
    from orlgen.render.jobs import generate
    from orlgen.review.files import write_files

    snapshot = capture("bench.slow_env:Slow")
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    return load_module(out / "slow.py", "bench_slow")


def _check(text: str) -> None:
    if not text or text.startswith("Error"):
        raise RuntimeError(f"slow-env rollout failed: {text[:200]}")


def serial(envs: list[Any], close: Callable[[Any], None]) -> float:
    """GRPOTrainer's order: all resets, then turn by turn, rollout by rollout."""
    started = time.perf_counter()
    for i, env in enumerate(envs):
        _check(env.reset(task_index=i // GENERATIONS))
    for turn in range(TURNS):
        for env in envs:
            _check(env.run(command=f"step {turn}"))
    for env in envs:
        close(env)
    return time.perf_counter() - started


def concurrent(envs: list[Any]) -> float:
    """AsyncGRPOTrainer's order: each rollout whole on its own pool thread."""

    def rollout(item: tuple[int, Any]) -> float | None:
        i, env = item
        _check(env.reset(task_index=i // GENERATIONS))
        for turn in range(TURNS):
            _check(env.run(command=f"step {turn}"))
        return env.get_reward()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(envs)) as pool:
        rewards = list(pool.map(rollout, enumerate(envs)))
    seconds = time.perf_counter() - started
    if rewards != [1.0] * len(envs):
        raise RuntimeError(f"unscored rollouts: {rewards}")
    return seconds
