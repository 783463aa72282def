"""Two ranks, one env, one budget: a real `torchrun --nproc_per_node 2` GRPO step on CPU (gloo),
`tests/support/two_ranks.py`, against an echo server behind the capacity middleware
(`tests/support/servers/capacity.py`) with as many sessions as the budget allows.

What must hold: TRL slices a group of 8 generations into 4 rows per rank (measured here, the
fact rank-aware prefetch rests on); each rank takes half the budget, opens exactly its rows'
sessions and never holds more than its share; the env refuses nothing; every session is deleted;
the logged orlgen metrics are the run's (both ranks summed), not rank 0's.
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


@pytest.fixture(scope="module")
def limited_url():
    with ServerProcess("examples.echo:Echo", entry="tests.support.servers.capacity") as server:
        post(server.url, f"/_fault/capacity?n={BUDGET}")
        yield server.url


def test_one_grpo_step_on_two_ranks_under_one_budget(limited_url, tmp_path):
    env = {**os.environ, "ORLGEN_MAX_SESSIONS": str(BUDGET), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [*TORCHRUN, "tests/support/two_ranks.py", limited_url, str(tmp_path)],
        cwd=os.path.dirname(os.path.dirname(__file__)),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]

    # TRL's slicing: one group of 8, the same task 4 times on each rank.
    assert [len(rank["resets"]) for rank in ranks] == [4, 4]
    assert len({task for rank in ranks for task in rank["resets"]}) == 1
    # Each rank: half the budget, never more held at once, nothing left open.
    assert [(rank["share"], rank["held"]) for rank in ranks] == [(4, 0), (4, 0)]
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
