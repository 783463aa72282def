"""`python -m bench.capacity [ROLLOUTS ...]`: concurrent rollouts against an env that
allows 4 open sessions (default: batches of 24 and 64).

The env is `bench.slow_env` (setup 1 s) behind the capacity middleware of
`tests/support/servers/capacity.py` (429 with `Retry-After: 1` past 4 open sessions). Each rollout is
AsyncGRPOTrainer's order on its own thread: `reset` (which waits for the setup), one tool call,
then `get_reward` (which deletes the session). The floor is ROLLOUTS / 4 waves of one setup. Each
batch runs without a budget (the runtime learns the env's capacity from its first refusals) and
with `ORLGEN_MAX_SESSIONS=4` (the env refuses nothing); prints wall time and its ratio to the
floor, the rollouts that ran, the creates the env refused per rollout and the asks refused (a
new session refused at least once). The runtime's own ORS client sends one `/create` per ask and
leaves a refusal to the session budget, so every refusal is an ask.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CAPACITY, SETUP_S = 4, 1.0
RESULTS = Path(__file__).resolve().parent / "capacity-results.json"
BATCHES = (24, 64)


def main(argv: list[str]) -> None:
    from bench.common import versions, write_json
    from bench.slow import generated_module, slow_server

    batches = [int(arg) for arg in argv] or list(BATCHES)
    found: dict = {"versions": versions()}
    with slow_server(SETUP_S, 0, entry="tests.support.servers.capacity") as url:
        module = generated_module(Path(tempfile.mkdtemp(prefix="orlgen-capacity-")))
        for rollouts in batches:
            floor = rollouts / CAPACITY * SETUP_S
            print(f"{rollouts} rollouts, env capacity {CAPACITY}, setup {SETUP_S:g} s; floor {floor:g} s")
            for label, limit in (("no budget", None), (f"ORLGEN_MAX_SESSIONS={CAPACITY}", CAPACITY)):
                found[f"{rollouts} {label}"] = seen = measure(module, url, rollouts, limit, floor)
                print(f"  {label}: {line(seen)}", flush=True)
    write_json(RESULTS, found)


def line(seen: dict) -> str:
    """One batch's numbers as one line."""
    rollouts = seen["rollouts"]
    return (
        f"{seen['seconds']:.2f} s ({seen['ratio']:.2f}x floor), {seen['ran']}/{rollouts} ran, env refused "
        f"{seen['refused']} ({seen['refused'] / rollouts:.2f} per rollout; {seen['refused_asks']} asks), "
        f"most open {seen['max_open']}"
    )


def measure(module, url: str, rollouts: int, limit: int | None, floor: float) -> dict:
    """One batch from a fresh budget and fresh server counts: its wall, ratio to the floor, the
    rollouts that ran and the server's counts."""
    from orlgen.runtime.session import breaker, budget

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
    ran = sum(error is None for error in errors)
    return {"rollouts": rollouts, "seconds": seconds, "ratio": seconds / floor, "ran": ran, **stats(url)}


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
