"""The same rollouts, through one generated adapter, against two independent ORS server
implementations: the openreward SDK's `Server` and ors-sdk's `ors.Server` (the `ors_server`
fixture, ids `openreward-sdk` and `ors-sdk`). The env is written once for both SDKs
(`tests/support/envs/both.py`); its module is generated from the openreward twin and pointed at
either server with `base_url=`. What every rollout does (scoring, refusals, task-only tools, images,
a crashing tool, a killed server) is tested on both servers where it is tested at all
(`test_rollout.py`, `test_faults.py`, `test_task_tools.py`, `test_content.py`, ... through the
`ors_kind` fixture); this file keeps what needs the both-env's tools or a fault middleware.

The fault cases are FAULT INJECTION where a middleware is named (`tests/support/servers/faults.py`,
small ASGI middlewares on either server's app); a killed or stopped server is the real thing, a
signal to the server's process. Everything goes through the adapter's public API (`reset`, the
tool methods, `get_reward`, `outcome`, `error`); the ORS client's own unit tests are in
`tests/test_ors_client.py`.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request

import pytest

from tests.support.envs.both import TASKS
from tests.support.servers.both import KINDS, BothServer
from tests.support.servers.faults import REFUSALS
from tests.support.waiting import process_state, wait_for

FAULTS = "tests.support.servers.faults:"
TARGET = TASKS["train"][0]["target"]  # task train[0]


def started(env, index: int = 0) -> str:
    prompt = env.reset(task_index=index)
    assert env.outcome == "running", env.error
    return prompt


# What the both-env's tools show: the same on both servers.


def test_other_split_and_an_ad_hoc_task(both_module, ors_server):
    env = both_module.BothEnv(base_url=ors_server.url)
    assert env.reset(split="test", task_index=0) == "Task 100: find the target number, then submit it."
    assert env.submit(answer=3) == "correct" and env.reward == 1.0
    assert env.reset(task_spec={"id": 7, "target": 42}).startswith("Task 7:")
    assert env.guess(guess=42) == "equal"


def test_a_long_output_arrives_whole(both_module, ors_server):
    """70,000 characters: both servers split them in 4096-character `chunk` events."""
    env = both_module.BothEnv(base_url=ors_server.url)
    started(env)
    text = env.long(size=70_000)
    assert len(text) == 70_000 and text == "".join(chr(ord("a") + i % 26) for i in range(70_000))
    assert env.outcome == "running"


# Faults: a fresh server per test, on each implementation.


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_a_stream_cut_after_its_task_id_resumes_and_runs_the_tool_once(both_module, ors_kind):
    with BothServer(ors_kind, (FAULTS + "CutAfterTaskId",)) as server:
        env = both_module.BothEnv(base_url=server.url)
        started(env)
        assert env.guess(guess=5) == "higher"
        assert _get(f"{server.url}/_cuts") == {"cut": 1, "resumed": 1}
        assert env.count() == "1"  # the tool ran once
        assert env.guess(guess=TARGET) == "equal" and env.count() == "2"
        assert env.submit(answer=TARGET) == "correct" and env.get_reward() == 1.0


@pytest.mark.slow
def test_a_25_second_call_is_kept_alive_by_pings(both_module, ors_server):
    env = both_module.BothEnv(base_url=ors_server.url)
    started(env)
    began = time.monotonic()
    assert env.wait(seconds=25) == "waited 25s"
    assert 25 <= time.monotonic() - began < 35 and env.outcome == "running"


@pytest.mark.slow
def test_a_stopped_server_ends_the_rollout_unscored_within_40_s(both_module, ors_kind):
    """SIGSTOP: the connection stays open and nothing answers, not even the pings. The call runs
    in a thread once the server shows as stopped; the server is let go (SIGCONT) after 45 s, so a
    runtime without a hang bound fails this test in 45 s instead of hanging it. What failed says
    where the server was when the call returned (one loaded run once saw an answer here)."""
    with BothServer(ors_kind) as server:
        env = both_module.BothEnv(base_url=server.url)
        started(env)
        pid = server.process.pid
        os.kill(pid, signal.SIGSTOP)
        assert wait_for(lambda: process_state(pid) == "T"), f"the server is {process_state(pid)!r}, not stopped"
        answer: list[tuple[str, float, str | None]] = []
        began = time.monotonic()

        def call() -> None:
            text = env.guess(guess=5)
            answer.append((text, time.monotonic() - began, process_state(pid)))

        thread = threading.Thread(target=call)
        thread.start()
        thread.join(45)
        os.kill(pid, signal.SIGCONT)
        thread.join(60)
    assert answer, "the call never returned"
    text, elapsed, state = answer[0]
    seen = f"{text!r} after {elapsed:.1f} s, the server in state {state!r}, on {server.url}"
    assert elapsed < 40.0 and text.startswith("Error: the environment failed"), seen
    assert (env.outcome, env.get_reward()) == ("env_error", None)
    assert "Hung: no byte from the server for 30 s" in env.error, env.error


@pytest.mark.slow
def test_503_starting_is_ridden_out(both_module, ors_kind):
    """Two `503`s with `X-Backend-State: starting` and `Retry-After: 1` before the create passes."""
    with BothServer(ors_kind, (FAULTS + "StartingBackend",)) as server:
        env = both_module.BothEnv(base_url=server.url)
        began = time.monotonic()
        assert env.reset(task_index=0).startswith("Task 0:"), env.error
        assert time.monotonic() - began >= 2.0  # Retry-After honoured, twice
        assert env.submit(answer=TARGET) == "correct" and env.get_reward() == 1.0


@pytest.fixture(scope="module", params=KINDS)
def refusing(request):
    with BothServer(request.param, (FAULTS + "StatusOnCall",)) as server:
        yield server


@pytest.mark.parametrize("status", [404, 410, 422])
def test_a_refused_call_ends_the_rollout_unscored_and_the_next_one_plays(both_module, refusing, status):
    """404 (a session the server does not know), 410 (deleted), 422: not retried; the next
    rollout of the same adapter plays."""
    env = both_module.BothEnv(base_url=refusing.url)
    started(env)
    began = time.monotonic()
    text = env.long(size=status)
    assert time.monotonic() - began < 2.0  # not retried
    assert text.startswith("Error: the environment failed") and REFUSALS[status] in text
    assert (env.outcome, env.finished, env.get_reward()) == ("env_error", True, None)
    started(env, 1)
    assert env.guess(guess=1) == "higher"


def test_402_on_a_call_says_the_account_has_no_credit(both_module, refusing):
    env = both_module.BothEnv(base_url=refusing.url)
    started(env)
    assert env.long(size=402).startswith("Error: the environment failed")
    assert env.outcome == "env_error" and env.get_reward() is None
    assert "402 Payment Required" in env.error and "credit" in env.error


def test_402_at_create_says_the_account_has_no_credit(both_module, refusing):
    env = both_module.BothEnv(base_url=refusing.url)
    text = env.reset(task_spec={"id": 402, "target": 1})
    assert text.startswith("Error: the environment failed") and env.outcome == "env_error"
    assert "402 Payment Required" in env.error and "credit" in env.error
