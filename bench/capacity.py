"""`python -m bench.capacity`: 24 concurrent rollouts against an env that allows 4 open sessions.

The env is `bench.slow_env` (setup 1 s) behind the capacity middleware of
`tests/support/servers/capacity.py` (429 with `Retry-After: 1` past 4 open sessions). Each rollout is
AsyncGRPOTrainer's order on its own thread: `reset` (which waits for the setup), then
`get_reward` (which deletes the session). The floor is 6 waves of one setup: 24 / 4 x 1 s. Run
without a budget (rollouts wait by backing off on 429) and with `ORLGEN_MAX_SESSIONS=4` (they
wait for a slot and the env refuses nothing); prints wall time, rewards and what the env refused.
"""

from __future__ import annotations

import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROLLOUTS, CAPACITY, SETUP_S = 24, 4, 1.0


def main() -> None:
    from orlgen.runtime import breaker, budget

    from bench.slow import generated_module, slow_server
    from tests.support.servers.capacity import post, stats

    with slow_server(SETUP_S, 0, entry="tests.support.servers.capacity") as url:
        module = generated_module(Path(tempfile.mkdtemp(prefix="orlgen-capacity-")))
        floor = ROLLOUTS / CAPACITY * SETUP_S
        print(f"{ROLLOUTS} rollouts, env capacity {CAPACITY}, setup {SETUP_S:g} s; floor {floor:g} s")
        for label, limit in (("no budget (back-off on 429)", None), (f"ORLGEN_MAX_SESSIONS={CAPACITY}", CAPACITY)):
            post(url, "/_fault/clear")
            post(url, f"/_fault/capacity?n={CAPACITY}")
            budget.forget()
            breaker.forget()
            budget.set_max_sessions(limit)
            seconds, errors = batch(module, url)
            seen = stats(url)
            ran = sum(error is None for error in errors)
            print(
                f"{label}: {seconds:.2f} s ({seconds / floor:.2f}x floor), {ran}/{ROLLOUTS} ran, "
                f"env refused {seen['refused']}, most open {seen['max_open']}"
            )
        budget.set_max_sessions(None)


def batch(module, url: str) -> tuple[float, list]:
    """Wall time of the batch, and each rollout's error (None: it ran)."""
    envs = [module.SlowEnv(base_url=url) for _ in range(ROLLOUTS)]
    barrier = threading.Barrier(ROLLOUTS)

    def rollout(env):
        barrier.wait()
        env.reset(task_index=0)
        env.run(command="true")  # one call: the session works
        env.get_reward()  # deletes the session, freeing its place
        return env.error

    started = time.perf_counter()
    with ThreadPoolExecutor(ROLLOUTS) as pool:
        errors = list(pool.map(rollout, envs))
    return time.perf_counter() - started, errors


if __name__ == "__main__":
    main()
