"""One session budget for a whole Ray cluster (`orlgen.runtime.session.cluster`): rollouts of a
generated TRL module on a two-node `ray.cluster_utils.Cluster` on this machine, in the Ray venv
(`tests/support/ray_rollouts.py`), against the both-env on the SDK's real server wearing the
counting middleware of `tests.support.servers.capacity`, which also plays a hosted env's
concurrency limit where a test asks for one (fault injection: a 429 past N open sessions)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.framework_venvs import ray_python
from tests.support.modules import REPO, generated
from tests.support.servers.both import BothServer
from tests.support.servers.capacity import post, stats

pytestmark = pytest.mark.slow
COUNTING = ("tests.support.servers.capacity:Faults",)


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("both")
    generated("tests.support.envs.both:Both", out)
    return out


@pytest.fixture
def server():
    with BothServer("openreward-sdk", middleware=COUNTING) as running:
        yield running


def on_the_cluster(scenario: str, url: str, module_dir, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ORLGEN_", "RAY_"))}
    done = subprocess.run(
        [ray_python(), "-m", "tests.support.ray_rollouts", scenario, url, str(module_dir)],
        cwd=REPO,
        env={**clean, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_two_nodes_hold_one_cap(server, module_dir):
    post(server.url, "/_fault/capacity?n=4&retry_after=1")
    report = on_the_cluster("share 12", server.url, module_dir, ORLGEN_MAX_SESSIONS="4")
    assert [reward for rewards in report["rewards"] for reward in rewards] == [1.0] * 24
    counted = stats(server.url)
    assert counted["max_open"] <= 4 and counted["refused"] == 0, counted
    assert counted["created"] == counted["deleted"] == 24
    assert report["budget"]["open"] == 0 and len(report["budget"]["holders"]) == 2  # one per node


def test_without_a_cap_the_cluster_learns_the_envs_capacity(server, module_dir):
    """24 rollouts ask at once: about 20 are refused in the first wave. A refusal seen before any
    session of the cluster opened teaches no capacity (only the window, 1), so the slow start
    overshoots once more: measured 35 refused asks; a retry storm would be hundreds."""
    post(server.url, "/_fault/capacity?n=4&retry_after=1")
    report = on_the_cluster("share 12", server.url, module_dir)
    assert [reward for rewards in report["rewards"] for reward in rewards] == [1.0] * 24
    counted = stats(server.url)
    assert counted["refused_asks"] <= 2 * 24, counted  # at most two refused creates per rollout
    assert 1 <= report["budget"]["window"] <= 5 and report["budget"]["refusals"] >= 1


def test_a_dead_nodes_leases_come_back_to_the_budget(server, module_dir):
    report = on_the_cluster("node-dies", server.url, module_dir, ORLGEN_MAX_SESSIONS="4")
    assert report["queued_open"] == 4  # the dead node's four leases, the live node's rollouts waiting
    assert report["rewards"] == [1.0] * 4
    assert report["budget"]["open"] == 0 and len(report["budget"]["holders"]) == 1


def test_a_server_one_node_finds_dead_ends_the_other_nodes_next_rollout_at_once(module_dir):
    with BothServer("openreward-sdk") as server:
        report = on_the_cluster(f"server-dies {server.process.pid}", server.url, module_dir)
    assert report["finder"]["reward"] is None and "ServerGone" in report["finder"]["error"], report
    other = report["other"]
    assert other["reward"] is None and other["error"].startswith("could not start task"), other
    assert "circuit open: the server was found dead (found by another worker: ServerGone" in other["error"]
