"""Rollouts of a TRL module on a two-node Ray cluster on this machine (`ray.cluster_utils.Cluster`,
the helper Ray's own tests use): `python -m tests.support.ray_rollouts SCENARIO ENV_URL MODULE_DIR`,
cwd the repo, in the Ray venv (`tests/support/framework_venvs.py`). Prints one JSON object.

Each node runs one worker actor (verl's layout: a long-lived worker per node running many
rollouts at once), pinned with a hard node affinity; a rollout is the both-env's task played to
its reward through the generated `BothEnv` (`tests/support/envs/both.py`): reset, `wait` (the
session held open a while), submit the target.

Scenarios:
- `share N`: 2N rollouts, N per worker, all at once; prints every reward and the budget actor's
  counts afterwards.
- `node-dies`: the second node's worker takes every slot of the budget with rollouts that hold
  their sessions for a minute; the first node's worker then asks for four more; the second node
  is removed; prints the first worker's rewards (they can only finish once the dead node's
  leases are reclaimed) and the actor's counts.
- `server-dies PID`: the first node's worker holds a session while this script kills the env's
  server (PID: fault injection, said so), so that worker finds the server dead; then the second
  node's worker starts a rollout; prints how each ended (`env.error`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import ray
from ray.cluster_utils import Cluster
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

SCENARIO, ENV_URL, MODULE_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
TARGETS = [10 + 7 * i for i in range(6)]  # the both-env's train tasks (tests/support/envs/both.py)


@ray.remote(num_cpus=0)
class Worker:
    def play(self, count: int, hold: float, first: int = 0) -> list[float | None]:
        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(lambda i: self.rollout(i % 6, hold), range(first, first + count)))

    def attempt(self, hold: float) -> dict:
        """One rollout of task 0; how it ended."""
        from both import BothEnv

        env = BothEnv(base_url=ENV_URL)
        self.play_one(env, 0, hold)
        return {"reward": env.get_reward(), "error": env.error}

    @staticmethod
    def rollout(index: int, hold: float) -> float | None:
        from both import BothEnv

        env = BothEnv(base_url=ENV_URL)
        Worker.play_one(env, index, hold)
        return env.get_reward()

    @staticmethod
    def play_one(env, index: int, hold: float) -> None:
        env.reset(split="train", task_index=index)
        env.wait(seconds=hold)
        env.submit(answer=TARGETS[index])


def budget_counts() -> dict:
    """The budget actor's counts ({} before a worker made it)."""
    names = [name for name in ray.util.list_named_actors() if name.startswith("orlgen-budget-")]
    return ray.get(ray.get_actor(names[0]).stats.remote()) if names else {}


def main() -> None:
    started = time.monotonic()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    second = cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    path = os.pathsep.join([os.getcwd(), MODULE_DIR])
    env_vars = {"PYTHONPATH": path, **{k: v for k, v in os.environ.items() if k.startswith("ORLGEN_")}}
    ray.init(address=cluster.address, logging_level="ERROR", runtime_env={"env_vars": env_vars})
    nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
    workers = [
        Worker.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
        for node in sorted(nodes, key=lambda n: n == second.node_id)  # the head's first
    ]
    report: dict = {"up_s": round(time.monotonic() - started, 1)}
    if SCENARIO.startswith("share"):
        per = int(SCENARIO.split()[1])
        rewards = ray.get([worker.play.remote(per, 0.5, first=i) for i, worker in enumerate(workers)])
        report |= {"rewards": rewards, "budget": budget_counts()}
    elif SCENARIO.startswith("server-dies"):
        finding = workers[0].attempt.remote(30.0)
        while budget_counts().get("held", 0) < 1:
            time.sleep(0.2)
        time.sleep(0.5)  # the `wait` call is under way
        os.kill(int(SCENARIO.split()[1]), signal.SIGKILL)
        report["finder"] = ray.get(finding, timeout=120)
        report["other"] = ray.get(workers[1].attempt.remote(0.1), timeout=120)
    else:
        holding = workers[1].play.remote(4, 60.0)
        while budget_counts().get("open", 0) < 4:
            time.sleep(0.2)
        waiting = workers[0].play.remote(4, 0.1)
        time.sleep(1.0)  # the first node's rollouts are queued for slots the second node holds
        report["queued_open"] = budget_counts()["open"]
        report["holders_before"] = len(budget_counts()["holders"])
        cluster.remove_node(second)
        removed = time.monotonic()
        report["rewards"] = ray.get(waiting, timeout=120)
        report["after_removal_s"] = round(time.monotonic() - removed, 1)
        report["budget"] = budget_counts()
        del holding
    print(json.dumps(report), flush=True)
    ray.shutdown()
    cluster.shutdown()


if __name__ == "__main__":
    main()
