"""`python -m bench.capacity [--one-try] [ROLLOUTS ...]`: concurrent rollouts against an env that
allows 4 open sessions (default: batches of 24 and 64).

The env is `bench.slow_env` (setup 1 s) behind the capacity middleware of
`tests/support/servers/capacity.py` (429 with `Retry-After: 1` past 4 open sessions). Each rollout is
AsyncGRPOTrainer's order on its own thread: `reset` (which waits for the setup), one tool call,
then `get_reward` (which deletes the session). The floor is ROLLOUTS / 4 waves of one setup. Each
batch runs without a budget (the runtime learns the env's capacity from its first refusals) and
with `ORLGEN_MAX_SESSIONS=4` (the env refuses nothing); prints wall time and its ratio to the
floor, the rollouts that ran, the creates the env refused per rollout and the asks refused (a
new session refused at least once; the SDK retries a refused `/create` up to three times within
about two seconds, Retry-After honoured, before the runtime hears of it). `--one-try` sets the
SDK's attempts at an env-server request to one, as the runtime's own ORS client asks (issue 28):
each ask is then one create, and the runtime hears of every refusal.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CAPACITY, SETUP_S = 4, 1.0
BATCHES = (24, 64)


def main(argv: list[str]) -> None:
    from bench.slow import generated_module, slow_server

    if "--one-try" in argv:
        import openreward.api._session.http as sdk_http

        sdk_http._ENV_SERVER_MAX_ATTEMPTS = 1  # a bench-only stand-in for a client without retries
    batches = [int(arg) for arg in argv if arg != "--one-try"] or list(BATCHES)
    with slow_server(SETUP_S, 0, entry="tests.support.servers.capacity") as url:
        module = generated_module(Path(tempfile.mkdtemp(prefix="orlgen-capacity-")))
        for rollouts in batches:
            floor = rollouts / CAPACITY * SETUP_S
            print(f"{rollouts} rollouts, env capacity {CAPACITY}, setup {SETUP_S:g} s; floor {floor:g} s")
            for label, limit in (("no budget", None), (f"ORLGEN_MAX_SESSIONS={CAPACITY}", CAPACITY)):
                print(f"  {label}: {measure(module, url, rollouts, limit, floor)}", flush=True)


def measure(module, url: str, rollouts: int, limit: int | None, floor: float) -> str:
    """One batch from a fresh budget and fresh server counts, as one line."""
    from orlgen.runtime import breaker, budget

    from tests.support.servers.capacity import post, stats

    post(url, "/_fault/clear")
    post(url, f"/_fault/capacity?n={CAPACITY}")
    budget.forget()
    breaker.forget()
    budget.set_max_sessions(limit)
    try:
        seconds, errors = batch(module, url, rollouts)
    finally:
        budget.set_max_sessions(None)
    seen = stats(url)
    ran = sum(error is None for error in errors)
    return (
        f"{seconds:.2f} s ({seconds / floor:.2f}x floor), {ran}/{rollouts} ran, env refused {seen['refused']} "
        f"({seen['refused'] / rollouts:.2f} per rollout; {seen['refused_asks']} asks), most open {seen['max_open']}"
    )


def batch(module, url: str, rollouts: int) -> tuple[float, list]:
    """Wall time of the batch, and each rollout's error (None: it ran)."""
    envs = [module.SlowEnv(base_url=url) for _ in range(rollouts)]
    barrier = threading.Barrier(rollouts)

    def rollout(env):
        barrier.wait()
        env.reset(task_index=0)
        env.run(command="true")  # one call: the session works
        env.get_reward()  # deletes the session, freeing its place
        return env.error

    started = time.perf_counter()
    with ThreadPoolExecutor(rollouts) as pool:
        errors = list(pool.map(rollout, envs))
    return time.perf_counter() - started, errors


if __name__ == "__main__":
    main(sys.argv[1:])
