"""Two ranks, one env, one budget: a real `torchrun --nproc_per_node 2` GRPO step on CPU (gloo),
`tests/support/two_ranks.py`, against an echo server behind the capacity middleware
(`tests/support/servers/capacity.py`) with as many sessions as the budget allows.

What must hold: TRL slices a group of 8 generations into 4 rows per rank (measured here, the
fact rank-aware prefetch rests on); the ranks hold the budget as one cap in the job's store,
each opens exactly its rows' sessions; the env refuses nothing; every session is deleted;
the logged orlgen metrics are the run's (both ranks summed), not rank 0's. And uneven ranks
share one cap, configured or learned, through the job's own `torch.distributed` store.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from orlgen.serve import ServerProcess

from tests.support.servers.capacity import post, stats

pytestmark = pytest.mark.slow  # a two-process torchrun GRPO step

BUDGET = 8
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]


def ranks_env(**extra: str) -> dict[str, str]:
    """The ranks' environment. A rank that dies by a signal prints its Python threads' stacks
    (one loaded run saw rank 0 abort in torch's teardown, after its results were written)."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1", **extra}


@pytest.fixture(scope="module")
def limited_url():
    with ServerProcess("examples.echo:Echo", entry="tests.support.servers.capacity") as server:
        post(server.url, f"/_fault/capacity?n={BUDGET}")
        yield server.url


def test_one_grpo_step_on_two_ranks_under_one_budget(limited_url, tmp_path):
    done = subprocess.run(
        [*TORCHRUN, "tests/support/two_ranks.py", limited_url, str(tmp_path)],
        cwd=os.path.dirname(os.path.dirname(__file__)),
        env=ranks_env(ORLGEN_MAX_SESSIONS=str(BUDGET)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]

    # TRL's slicing: one group of 8, the same task 4 times on each rank.
    assert [len(rank["resets"]) for rank in ranks] == [4, 4]
    assert len({task for rank in ranks for task in rank["resets"]}) == 1
    # Each rank: the run's budget, shared through the store; its rows held at most, nothing left open.
    assert [(rank["share"], rank["shared"], rank["held"]) for rank in ranks] == [(8, True, 0), (8, True, 0)]
    assert all(rank["peak"] <= 4 for rank in ranks)
    # The env: exactly the 8 sessions the rows need (prefetch without rank-awareness opens 16),
    # nothing refused, and every one deleted.
    deadline = time.monotonic() + 10
    while stats(limited_url)["open"] and time.monotonic() < deadline:
        time.sleep(0.1)
    seen = stats(limited_url)
    assert (seen["created"], seen["refused"], seen["open"]) == (8, 0, 0) and seen["max_open"] <= BUDGET
    # Metrics summed over both ranks, the same in each rank's log.
    for rank in ranks:
        logged = rank["logged"]
        assert logged["orlgen/rollouts"] == 8.0 and logged["orlgen/sessions_opened"] == 8.0
        assert logged["orlgen/capacity_waits"] == 0.0 and logged["orlgen/breaker_rejections"] == 0.0


def test_uneven_ranks_share_one_cap_through_the_jobs_store(limited_url, tmp_path):
    post(limited_url, "/_fault/clear")
    post(limited_url, "/_fault/capacity?n=3")
    try:
        done = subprocess.run(
            [*TORCHRUN, "tests/support/two_ranks.py", "--shared", limited_url, str(tmp_path)],
            cwd=os.path.dirname(os.path.dirname(__file__)),
            env=ranks_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:  # the module's server as the other test expects it
        post(limited_url, "/_fault/clear")
        post(limited_url, f"/_fault/capacity?n={BUDGET}")
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = [json.loads((tmp_path / f"shared{rank}.json").read_text()) for rank in (0, 1)]
    # A budget of 3 for the run: one cap in the store, not shares of 2 and 1. Rank 0 used all 3
    # while rank 1 was idle, and the server never saw more than 3 open nor refused one.
    assert first["shared"] and second["shared"]
    assert first["configured"] == [[1.0] * 12, 3] and second["configured"][0] == [1.0] * 2
    seen = first["stats_configured"]
    assert (seen["max_open"], seen["refused"], seen["created"]) == (3, 0, 16)
    # No budget, the env at 4: rank 0 learned it from refusals; rank 1 found it in the store and
    # queued behind it, asking nothing the env refused.
    assert first["learned"][0] == [1.0] * 12 and second["learned"][0] == [1.0] * 8
    assert second["window_before"] == 4 and second["learned"][1] <= 4
    before, after = second["stats_before"], second["stats_after"]
    assert before["refused_asks"] > 0 and after["refused_asks"] == before["refused_asks"]
    assert after["max_open"] <= 4
