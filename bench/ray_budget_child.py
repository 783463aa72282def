"""The Ray side of `python -m bench.ray_budget` (which starts it): run in the Ray venv by path,
`python bench/ray_budget_child.py MODE ENV_URL MODULE_DIR ROLLOUTS HOLD_S LEASE_N [BEAT_S]`, with
PYTHONPATH holding this repository (orlgen) and nothing of its `tests` or `bench` imported.
Prints one JSON object on its last line.

A two-node `ray.cluster_utils.Cluster` on this machine (the layout of tests/support/ray_rollouts.py:
the head and one more node, a `Worker` actor pinned to each with a hard node affinity), then:

- lease cost (LEASE_N > 0): in each worker in turn (the head node's, then the other's), LEASE_N
  timed samples each of `Budget.acquire` + `release` of the env budget `budget.for_env` makes
  inside Ray (its counts in the env's `Tally` actor on the head node), of a slot's whole
  accounting (`acquire`, `opened`, `closed`: what one rollout's session costs the budget), of
  one bare `Tally.add` round trip, and of the same acquire + release on a process-local budget;
- rollouts: ROLLOUTS rollouts of the generated both-env module (`BothEnv`: `reset`,
  `wait(HOLD_S)` holding the session, `submit` the target, `get_reward`), half in each worker,
  all at once (a thread each); the wall from dispatch to the last reward, in the driver, and
  each worker's budget round trips to the actor during the rollouts (`count_round_trips`).

BEAT_S, when given, sets each worker's heartbeat period (`cluster.BEAT_S`: a measurement switch,
to show what the heartbeat does to the cap). MODE: `cluster` (the cluster-wide budget, the runtime as it is: ORLGEN_MAX_SESSIONS, if set in
this process's environment, is the cluster's cap) or `per-process` (the pre-change behaviour,
each worker process its own budget: a measurement switch, below).
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

MODE, ENV_URL, MODULE_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
ROLLOUTS, HOLD_S, LEASE_N = int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
BEAT_S = float(sys.argv[7]) if len(sys.argv) > 7 else None
TARGETS = [10 + 7 * i for i in range(6)]  # the both-env's train tasks (tests/support/envs/both.py)
LEASE_KEY = ("bench.ray_budget", "lease")  # a budget of its own: no env behind it, no session opened


def count_round_trips() -> list[int]:
    """MEASUREMENT INSTRUMENT: counts, in this worker process, the runtime's calls to its `Tally`
    actor that wait for the answer (`RayCounts.add` and `swap`, and `news_of_death` and
    `tell_dead` where the runtime has them: one `ray.get` round trip each; the heartbeat's
    `beat` is sent without waiting and not counted). Returns the live count."""
    import threading

    from orlgen.runtime.session import cluster

    trips, lock = [0], threading.Lock()

    def counted(original):
        def call(self, *args, **kwargs):
            with lock:
                trips[0] += 1
            return original(self, *args, **kwargs)

        return call

    for name in ("add", "swap", "news_of_death", "tell_dead"):
        if hasattr(cluster.RayCounts, name):
            setattr(cluster.RayCounts, name, counted(getattr(cluster.RayCounts, name)))
    return trips


@ray.remote(num_cpus=0)
class Worker:
    def __init__(self, per_process: bool, beat_s: float | None) -> None:
        self.trips = count_round_trips()
        if beat_s is not None:
            # MEASUREMENT SWITCH: the period of this process's lease reports to the actor
            # (`cluster.BEAT_S`, 2 s), read by the heartbeat thread before each sleep.
            from orlgen.runtime.session import cluster

            cluster.BEAT_S = beat_s
        if per_process:
            # MEASUREMENT SWITCH, not a way to run orlgen: with `in_ray` false the budget ignores
            # the Ray job and each process keeps its own counts, as before the cluster-wide budget
            # (53bfa80). Set before the first rollout: a budget is made at its env's first reset.
            from orlgen.runtime.session import cluster

            cluster.in_ray = lambda: False
        import both  # noqa: F401  (imported before the clock starts, not in the first rollout)

    def where(self) -> dict:
        return {"node": ray.get_runtime_context().get_node_id()[:12], "pid": os.getpid()}

    def play(self, count: int, hold: float, first: int) -> list[dict]:
        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(lambda i: self.rollout(i % 6, hold), range(first, first + count)))

    @staticmethod
    def rollout(index: int, hold: float) -> dict:
        from both import BothEnv

        started = time.perf_counter()
        env = BothEnv(base_url=ENV_URL)
        env.reset(split="train", task_index=index)
        opened = time.perf_counter()
        env.wait(seconds=hold)
        env.submit(answer=TARGETS[index])
        reward = env.get_reward()
        seconds = time.perf_counter() - started
        return {"reward": reward, "seconds": seconds, "reset_s": opened - started, "error": env.error}

    def round_trips(self) -> int:
        return self.trips[0]

    def budgets(self) -> list[dict]:
        """This process's budgets: their caps and the most slots it took at once."""
        from orlgen.runtime.session import budget

        return [
            {"shared": b.shared, "slots": b.slots, "window": b.window, "peak": b.peak, "open": b.open}
            for b in budget._budgets.values()
            if b is not budget._budgets.get(LEASE_KEY)
        ]

    def lease(self, n: int) -> dict[str, list[float]]:
        """Seconds per sample of each lease operation (after 20 untimed of each)."""
        from orlgen.runtime.session import budget

        shared = budget.for_env(LEASE_KEY, None)
        if not shared.shared:
            raise RuntimeError("the lease budget is not the cluster's: is ray initialised in this worker?")
        local = budget.Budget(4, 4)
        actor, holder = shared._counts._actor, shared._counts._holder

        def pair(b: budget.Budget) -> None:
            b.acquire(30.0)
            b.release()

        def slot() -> None:
            shared.acquire(30.0)
            shared.opened()
            shared.closed()  # gives the slot back (`release`)

        def add() -> None:
            ray.get(actor.add.remote(holder, "bench", 0))

        cases = {
            "acquire+release (cluster)": lambda: pair(shared),
            "slot: acquire+opened+closed (cluster)": slot,
            "Tally.add round trip": add,
            "acquire+release (process-local)": lambda: pair(local),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for name, case in cases.items():
            for _ in range(20):
                case()
            for _ in range(n):
                started = time.perf_counter()
                case()
                times[name].append(time.perf_counter() - started)
        return times


def budget_counts() -> dict:
    """The env's `Tally` actor's counts ({} when none was made: the per-process mode)."""
    names = [n for n in ray.util.list_named_actors() if n.startswith("orlgen-budget-")]
    found = {}
    for name in names:
        counts = ray.get(ray.get_actor(name).stats.remote())
        if "bench" not in counts:  # the lease budget's actor has a `bench` count
            found = counts
    return found


def main() -> None:
    started = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    second = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    path = os.pathsep.join([*os.environ.get("PYTHONPATH", "").split(os.pathsep), MODULE_DIR])
    env_vars = {"PYTHONPATH": path, **{k: v for k, v in os.environ.items() if k.startswith("ORLGEN_")}}
    ray.init(address=cluster.address, logging_level="ERROR", runtime_env={"env_vars": env_vars})
    nodes = sorted((n["NodeID"] for n in ray.nodes() if n["Alive"]), key=lambda n: n == second.node_id)
    workers = [
        Worker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
            MODE == "per-process", BEAT_S
        )
        for node in nodes  # the head's first
    ]
    report: dict = {"workers": ray.get([w.where.remote() for w in workers])}
    report["up_s"] = time.monotonic() - started
    if LEASE_N:
        report["lease"] = [ray.get(w.lease.remote(LEASE_N)) for w in workers]  # one worker at a time
    per = ROLLOUTS // len(workers)
    trips = ray.get([w.round_trips.remote() for w in workers])
    began = time.perf_counter()
    played = ray.get([w.play.remote(per, HOLD_S, i * per) for i, w in enumerate(workers)])
    report["wall_s"] = time.perf_counter() - began
    report["round_trips"] = [
        after - before for after, before in zip(ray.get([w.round_trips.remote() for w in workers]), trips, strict=True)
    ]
    report["rollouts"] = played
    report["budget"] = budget_counts()
    report["budgets"] = ray.get([w.budgets.remote() for w in workers])
    print(json.dumps(report), flush=True)
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()
