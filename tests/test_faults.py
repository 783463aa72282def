"""Faults against real servers: what the model sees, what the adapter's state says, how long it
takes — and that no session of ours outlives its rollout. Each fault is real: a killed server
process, a tool that raises, a session deleted through the server's own API, a slow setup. Every
test runs on both ORS implementations (`ors_kind`: the openreward SDK's `Server`, ors-sdk's
`ors.Server` serving the same env through `tests/support/envs/ors_port.py`)."""

from __future__ import annotations

import gc
import importlib
import json
import logging
import multiprocessing
import pickle
import re
import sys
import time
import urllib.error
import urllib.request

import pytest
from orlgen.capture.live import capture
from orlgen.render.jobs import generate
from orlgen.review.files import write_files
from orlgen.runtime import COVERAGE, DriftError, outcome_reward_with
from orlgen.serve import ServerProcess

from tests.support.servers.both import server_process, target
from tests.support.waiting import wait_for

COUNTING = "tests.support.envs.counting:Counting"

pytestmark = pytest.mark.slow  # a fresh server per test, real timeouts and restarts


@pytest.fixture(scope="module")
def counting(tmp_path_factory):
    """The generated module of `tests.support.envs.counting:Counting`, importable by name (as `counting`)
    so that adapters pickle into spawned processes."""
    out = tmp_path_factory.mktemp("counting")
    snapshot = capture("tests.support.envs.counting:Counting")
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    sys.path.insert(0, str(out))
    yield importlib.import_module("counting")
    sys.path.remove(str(out))


@pytest.fixture
def server(tmp_path, monkeypatch, ors_kind):
    """A fresh counting server per test, of each ORS implementation; `server.counts()` is its view
    of our sessions."""
    count_file = tmp_path / "counts.json"
    monkeypatch.setenv("ORLGEN_COUNT_FILE", str(count_file))
    process = server_process(ors_kind, COUNTING).start()
    process.counts = lambda: json.loads(count_file.read_text()) if count_file.exists() else {"opened": 0, "closed": 0}
    yield process
    process.stop()


def test_no_session_outlives_its_rollout(counting, server):
    """Finished, abandoned, failed and collected rollouts: the server ends with zero of ours."""
    envs = [counting.CountingEnv(base_url=server.url) for _ in range(3)]
    for round_ in range(3):
        for i, env in enumerate(envs):
            env.reset(task_index=i)
            if i == 0:
                env.finish()  # finished by the environment: closed at once
            elif i == 1 and round_ == 2:
                env.wait(seconds=-1)  # a model error: the rollout goes on, open
    assert server.counts()["opened"] == 9
    envs[0].reset(task_index=0)  # reset closes the previous session
    del envs, env
    gc.collect()  # the finalizer closes what is left
    assert wait_for(lambda: server.counts()["closed"] == server.counts()["opened"] == 10)


def test_server_killed_mid_episode_is_bounded(counting, server):
    env = counting.CountingEnv(base_url=server.url, timeout=3.0)
    env.reset(task_index=0)
    server.stop()
    started = time.monotonic()
    text = env.wait(seconds=0)
    elapsed = time.monotonic() - started
    assert text.startswith("Error: the environment failed (wait failed:")
    assert (env.outcome, env.finished, env.reward) == ("env_error", True, None)
    assert elapsed < 6.0


def test_tool_slower_than_the_timeout_ends_the_rollout(counting, server):
    """A 3 s bound (the reset must fit in it too, on a busy machine) against a 20 s tool."""
    env = counting.CountingEnv(base_url=server.url, timeout=3.0)
    assert env.reset(task_index=0) == "counting task 0", env.error
    started = time.monotonic()
    text = env.wait(seconds=20)
    assert time.monotonic() - started < 8.0
    assert "CallTimeout: no answer within 3 s" in text and env.outcome == "env_error"


def test_session_deleted_under_us(counting, server):
    env = counting.CountingEnv(base_url=server.url)
    env.reset(task_index=0)
    request = urllib.request.Request(
        f"{server.url}/delete", method="POST", headers={"X-Session-ID": env._episode._session.sid}
    )
    urllib.request.urlopen(request, timeout=10).read()
    text = env.wait(seconds=0)
    assert text.startswith("Error: the environment failed") and env.outcome == "env_error"
    env.reset(task_index=1)  # the next rollout is fine
    assert env.wait(seconds=0) == "waited"


def test_server_restarted_between_rollouts(counting, server):
    env = counting.CountingEnv(base_url=server.url, timeout=10.0)
    assert env.reset(task_index=0) == "counting task 0", env.error
    server.stop()
    server.start()  # same port
    assert env.reset(task_index=1) == "counting task 1"  # the same adapter recovers
    assert env.finish() == "finished" and env.reward == 1.0


def test_slow_setup_waits_within_the_bound(counting, server):
    env = counting.CountingEnv(base_url=server.url, timeout=15.0)
    started = time.monotonic()
    assert env.reset(task_index=9) == "counting task 9"  # setup takes 4 s
    assert 3.5 < time.monotonic() - started < 15.0
    quick = counting.CountingEnv(base_url=server.url, timeout=1.5)
    text = quick.reset(task_index=9)
    assert "no answer within 1.5 s" in text and quick.outcome == "env_error"


def test_unknown_tool_is_the_models_error(counting, server):
    env = counting.CountingEnv(base_url=server.url)
    env.reset(task_index=0)
    text = env._call_tool("no_such_tool", None, {})
    assert text.startswith("Error: no_such_tool was not run (not_found)")
    assert env.outcome == "running" and env.tool_errors == 1
    assert env.finish() == "finished"


def test_secrets_reach_the_session_and_nowhere_else(counting, server, caplog):
    """The runtime sends secrets where each server reads them: in `X-Secrets` to the SDK's server,
    in `/create`'s `secrets` field to ors-sdk 0.1.0, whose schema declares it (a field the SDK's
    server refuses with a 422: `test_ors_servers.py` pins the difference). Either way the session
    gets them, and they show nowhere else."""
    canary = "canary-5f3a9c"
    env = counting.CountingEnv(base_url=server.url, secrets={"OPENAI_API_KEY": canary})
    with caplog.at_level(logging.DEBUG):
        assert env.reset(task_index=0) == "counting task 0", env.error
        received = json.loads(env.secret_names())
        assert "OPENAI_API_KEY" in received
        env.wait(seconds=-1)
    assert canary not in repr(env) and canary not in str(env) and canary not in caplog.text
    assert canary not in env.last_output


def test_drift_guard(counting, monkeypatch, caplog, ors_kind):
    """Served: the counting env after an upstream change (one tool reworded, one added)."""
    with server_process(ors_kind, "tests.support.envs.counting:DriftedCounting") as drifted:
        monkeypatch.setattr("orlgen.runtime.episode._drift_checked", {})
        strict = counting.CountingEnv(base_url=drifted.url, on_drift="raise")
        with pytest.raises(DriftError, match=r"'finish' changed; 'extra' is new\); run `orlgen snapshot`"):
            strict.reset(task_index=0)
        monkeypatch.setattr("orlgen.runtime.episode._drift_checked", {})
        with caplog.at_level(logging.WARNING, logger="orlgen"):
            counting.CountingEnv(base_url=drifted.url).reset(task_index=0)
            counting.CountingEnv(base_url=drifted.url).reset(task_index=1)
        assert [r.message.count("differ from the snapshot") for r in caplog.records] == [1]  # once per process


def test_no_drift_against_the_captured_env(counting, server, caplog, monkeypatch):
    monkeypatch.setattr("orlgen.runtime.episode._drift_checked", {})
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        counting.CountingEnv(base_url=server.url, on_drift="raise").reset(task_index=0)
    assert caplog.records == []


def test_scoring_coverage_and_failure_policy(counting, server):
    COVERAGE.drain()
    envs = [counting.CountingEnv(base_url=server.url, timeout=4.0) for _ in range(4)]
    for i, env in enumerate(envs):
        assert env.reset(task_index=i) == f"counting task {i}", env.error
    envs[0].finish()
    envs[1].wait(seconds=-1)  # a model error, then never finished
    envs[2].wait(seconds=20)  # times out: an environment error
    rewards = outcome_reward_with(env_error=-1.0)(envs)
    assert rewards == [1.0, None, -1.0, None]
    assert COVERAGE.drain() == {
        "rollouts": 4.0,
        "scored_fraction": 0.25,
        "env_errors": 1.0,
        "unfinished": 2.0,
        "tool_errors": 1.0,
        "tool_calls_mean": 0.75,
    }
    assert COVERAGE.drain() == {}


def _rollouts(args):
    """In a spawned process: unpickle an adapter, play rollouts, report what it saw."""
    env, indices = args
    results = []
    for index in indices:
        prompt = env.reset(task_index=index)
        results.append((index, prompt, env.finish(), env.reward))
    return results


def test_rollouts_from_several_processes(counting, server):
    env = counting.CountingEnv(base_url=server.url)
    clone = pickle.loads(pickle.dumps(env))
    assert clone._episode.connection == env._episode.connection and not clone._episode.open
    work = [(env, [0, 1]), (env, [2, 3]), (env, [4, 5])]
    pool = multiprocessing.get_context("spawn").Pool(3)
    try:
        results = [r for chunk in pool.map(_rollouts, work) for r in chunk]
    finally:
        # Workers end on the pool's own sentinel, not on SIGTERM (`with Pool` terminates): once, in a
        # loaded CI run, a terminated worker idle in the task queue's lock never exited and the pool's
        # join waited forever. Graceful ends keep this test about rollouts across processes.
        pool.close()
        pool.join()
    assert sorted(results) == [(i, f"counting task {i}", "finished", 1.0) for i in range(6)]
    assert wait_for(lambda: server.counts() == {"opened": 6, "closed": 6})


def open_unpinged_session(url: str, index: int) -> str:
    """A session opened with plain HTTP, which never pings (the control of the keepalive test)."""

    def post(path: str, payload: dict, sid: str | None = None) -> str:
        headers = {"Content-Type": "application/json", **({"X-Session-ID": sid} if sid else {})}
        request = urllib.request.Request(url + path, data=json.dumps(payload).encode(), headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read().decode()

    sid = re.search(r"event: task_id\r?\ndata: (\S+)", post("/create_session", {})).group(1)
    post("/create", {"split": "train", "index": index}, sid)
    return sid


def test_keepalive_outlives_the_reaper(counting, tmp_path, monkeypatch, ors_kind):
    """The SDK pings every 10 s from its own thread; the server reaps sessions idle for 900 s.
    Against a server whose clock runs 60 times fast (reaping after 15 real seconds, and looking
    often), a session that never pings is reaped, while our idle session, opened before it, lives."""
    count_file = tmp_path / "counts.json"
    monkeypatch.setenv("ORLGEN_COUNT_FILE", str(count_file))
    with ServerProcess(target(ors_kind, COUNTING), entry="tests.support.servers.fast_clock") as fast:
        alive = counting.CountingEnv(base_url=fast.url)
        alive.reset(task_index=0)
        unpinged = open_unpinged_session(fast.url, 1)
        assert wait_for(lambda: count_file.exists() and json.loads(count_file.read_text())["closed"] == 1, 45)
        assert alive.wait(seconds=0) == "waited"
        ping = urllib.request.Request(f"{fast.url}/ping", method="POST", headers={"X-Session-ID": unpinged})
        with pytest.raises(urllib.error.HTTPError, match="404"):
            urllib.request.urlopen(ping, timeout=10)
