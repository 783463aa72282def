"""64 rollouts at once through one process's adapters, the way AsyncGRPOTrainer's worker runs them
(each rollout on a thread of a pool, its own adapter, `reset` → tools → `get_reward`), against
a real counting server. What must hold: every call gets its own answer, process-wide state
(the drift check, the scoring coverage, the SDK loop's pending work) is updated exactly once per
event, and every session is deleted. On both ORS implementations (`ors_kind`)."""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from orlgen.runtime import COVERAGE
from orlgen.runtime.session.connection import _sdk_loop

from tests.support.modules import generated
from tests.support.servers.both import server_process
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # 64 rollouts at once against a server

N = 64


@pytest.fixture(scope="module")
def counting(tmp_path_factory):
    return generated("tests.support.envs.counting:Counting", tmp_path_factory.mktemp("counting"))


@pytest.fixture
def drifted(tmp_path, monkeypatch, ors_kind):
    """The counting env after an upstream change (one tool reworded, one added), counting sessions."""
    count_file = tmp_path / "counts.json"
    monkeypatch.setenv("ORLGEN_COUNT_FILE", str(count_file))
    with server_process(ors_kind, "tests.support.envs.counting:DriftedCounting") as server:
        server.counts = lambda: json.loads(count_file.read_text())
        yield server


def rollout(env, index, barrier):
    """One rollout as the async worker plays it, with a distinct answer to check at each step."""
    barrier.wait()  # all 64 start together
    prompt = env.reset(task_index=index % 9)
    answers = [env.wait(seconds=0.05 * (index % 3)), env.wait(seconds=0.0), env.finish()]
    return prompt, answers, env.get_reward(), threading.current_thread().name


def test_64_concurrent_rollouts(counting, drifted, caplog, monkeypatch):
    monkeypatch.setattr("orlgen.runtime.episode._drift_checked", {})
    COVERAGE.drain()
    envs = [counting.CountingEnv(base_url=drifted.url) for _ in range(N)]
    barrier = threading.Barrier(N)
    with caplog.at_level(logging.WARNING, logger="orlgen"), ThreadPoolExecutor(N) as pool:
        results = list(pool.map(rollout, envs, range(N), [barrier] * N))

    assert len({thread for *_, thread in results}) == N  # really concurrent
    for index, (prompt, answers, reward, _) in enumerate(results):
        assert prompt == f"counting task {index % 9}"  # each rollout got its own task's prompt
        assert answers == ["waited", "waited", "finished"]
        assert reward == 1.0
    for env in envs:
        assert (env.outcome, env.tool_calls, env.rewards, env._episode.open) == (
            "finished",
            3,
            [None, None, 1.0],
            False,
        )

    # The drift check ran once for the class, however many first resets raced for it.
    assert [r.message.count("differ from the snapshot") for r in caplog.records] == [1]
    # Coverage counted each rollout once.
    assert COVERAGE.drain() == {
        "rollouts": float(N),
        "scored_fraction": 1.0,
        "env_errors": 0.0,
        "unfinished": 0.0,
        "tool_errors": 0.0,
        "tool_calls_mean": 3.0,
    }
    # Nothing left pending on the SDK loop, and every session deleted on the server.
    assert not _sdk_loop().pending
    assert wait_for(lambda: drifted.counts() == {"opened": N, "closed": N}), drifted.counts()
