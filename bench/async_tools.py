"""Would `async def` tool methods speed up AsyncGRPOTrainer on a slow env? (issue 18, item 8)

TRL 1.16's async rollout worker awaits `async def` tools on its own event loop and sends sync
ones to a thread pool sized `max_inflight_tasks`; `reset` always goes to the pool. This runs the
slow env (`bench.slow_env`) in that order twice, for 8, 32 and 64 concurrent rollouts:
  sync:  what orlgen ships: every tool call on a pool thread, blocking on the SDK's loop;
  async: a prototype of async tool methods: the same session call, awaited from the worker's
         loop (`asyncio.wrap_future` over the SDK loop), no thread per call;
each the median of 3, next to the floor (one setup + three tool latencies). GRPOTrainer is not
measured: it gathers async tools only within one rollout's turn and runs rollouts one after
another, so async methods cannot change its serial order (trl 1.16 `_tool_call_loop`).

    python -m bench.async_tools [--quick]
"""

from __future__ import annotations

import asyncio
import functools
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.common import median
from bench.slow import GENERATIONS, TURNS, concurrent, delays, floor_s, generated_module, slow_server

REPS = 3


async def _async_rollouts(envs: list[Any]) -> float:
    from orlgen.runtime.session.connection import _sdk_loop

    loop = asyncio.get_running_loop()
    sdk = _sdk_loop().loop

    async def tool(env: Any, command: str) -> Any:
        call = asyncio.run_coroutine_threadsafe(env._episode._session.call_tool("run", {"command": command}), sdk)
        return env._episode._record(await asyncio.wrap_future(call)).content

    async def rollout(pool: ThreadPoolExecutor, i: int, env: Any) -> float | None:
        await loop.run_in_executor(pool, functools.partial(env.reset, task_index=i // GENERATIONS))
        for turn in range(TURNS):
            await tool(env, f"step {turn}")
        return await loop.run_in_executor(pool, env.get_reward)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(envs)) as pool:
        rewards = await asyncio.gather(*(rollout(pool, i, env) for i, env in enumerate(envs)))
    if rewards != [1.0] * len(envs):
        raise RuntimeError(f"unscored rollouts: {rewards}")
    return time.perf_counter() - started


def main(quick: bool) -> None:
    setup_s, tool_s = delays(quick)
    floor = floor_s(setup_s, tool_s)
    with tempfile.TemporaryDirectory(prefix="orlgen-bench-") as tmp, slow_server(setup_s, tool_s) as url:
        module = generated_module(Path(tmp))
        print(f"setup {setup_s:g} s, tools {tool_s:g} s, floor {floor:.2f} s")
        print("rollouts | sync tools (shipped) | async tools (prototype)")
        for batch in (8, 32, 64):
            sync = median([concurrent([module.SlowEnv(base_url=url) for _ in range(batch)]) for _ in range(REPS)])
            asynchronous = median(
                [
                    asyncio.run(_async_rollouts([module.SlowEnv(base_url=url) for _ in range(batch)]))
                    for _ in range(REPS)
                ]
            )
            print(
                f"{batch:8d} | {sync:.2f} s ({sync / floor:.2f}x floor) | "
                f"{asynchronous:.2f} s ({asynchronous / floor:.2f}x floor)",
                flush=True,
            )


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
