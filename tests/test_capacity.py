"""Environments with a capacity, an unfunded account and a flapping server (`tests/support/servers/capacity.py`,
a fault-injecting middleware on the real SDK server), driven through the checked-in echo module
the way AsyncGRPOTrainer's worker drives it: each rollout on its own thread, all at once.

What must hold: with no budget, rollouts past the env's limit wait for it instead of failing, the
runtime learns the limit from the env's first refusals and queues the rest behind it (a window
that shrinks to what was open at a refusal and grows again after a calm period); with
`ORLGEN_MAX_SESSIONS` at the limit the env refuses nothing; a slot comes back however a
rollout ends; 402 says what it means; the breaker stops asking a dead env and recovers by a probe.
"""

from __future__ import annotations

import copy
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from orlgen.runtime import set_max_sessions
from orlgen.runtime.session import admission, breaker, budget
from orlgen.serve import ServerProcess

from tests.support.servers.capacity import post, stats
from tests.support.waiting import wait_for

ROLLOUTS = 24
CAPACITY = 4


@pytest.fixture(scope="module")
def faulty_url():
    with ServerProcess("examples.echo:Echo", entry="tests.support.servers.capacity") as server:
        yield server.url


@pytest.fixture
def faulty(faulty_url):
    """The faulty server with the given faults (`capacity=N`, `payment`, `down`), counts at zero,
    and this process's budgets and breakers made anew."""

    def start(capacity=None, payment=False, retry_after=1):
        post(faulty_url, "/_fault/clear")
        if capacity is not None:
            post(faulty_url, f"/_fault/capacity?n={capacity}&retry_after={retry_after}")
        if payment:
            post(faulty_url, "/_fault/payment")
        return faulty_url

    budget.forget()
    breaker.forget()
    yield start
    post(faulty_url, "/_fault/clear")
    budget.forget()
    breaker.forget()


def rollout(env, index, barrier):
    barrier.wait()  # all start together, as a batch does
    env.reset(task_index=0)
    time.sleep(0.2)  # the model generating: the session stays open meanwhile
    env.echo(text="hello")
    return env.get_reward(), env.error


def play(echo_module, url, **options):
    envs = [echo_module.EchoEnv(base_url=url, **options) for _ in range(ROLLOUTS)]
    barrier = threading.Barrier(ROLLOUTS)
    with ThreadPoolExecutor(ROLLOUTS) as pool:
        return list(pool.map(rollout, envs, range(ROLLOUTS), [barrier] * ROLLOUTS))


def learned_window(echo_module, url):
    """The capacity this process learned for the env at `url` (None: none yet)."""
    connection = echo_module.EchoEnv(base_url=url)._episode.connection
    return budget.for_env(admission.env_key(connection), echo_module.EchoEnv).window


@pytest.mark.slow
def test_without_a_budget_rollouts_learn_the_envs_capacity_and_queue_behind_it(echo_module, faulty):
    url = faulty(capacity=CAPACITY)
    results = play(echo_module, url)
    assert [reward for reward, _ in results] == [1.0] * ROLLOUTS, [error for _, error in results if error]
    seen = stats(url)
    assert seen["max_open"] <= CAPACITY
    assert 0 < seen["refused_asks"] <= ROLLOUTS  # asked past the limit, each rollout at most once
    assert learned_window(echo_module, url) == CAPACITY
    assert wait_for(lambda: stats(url)["open"] == 0)  # every session deleted
    post(url, "/_fault/clear")  # counts back to zero, the same limit
    post(url, f"/_fault/capacity?n={CAPACITY}")
    results = play(echo_module, url)  # the next batch: queued behind what was learned, not asking
    assert [reward for reward, _ in results] == [1.0] * ROLLOUTS, [error for _, error in results if error]
    assert stats(url)["refused_asks"] <= 1  # at most the window's growth probing past it


def test_the_learned_window_shrinks_at_a_refusal_and_grows_after_a_calm_period(echo_module, faulty, monkeypatch):
    """`Retry-After: 0` so that the SDK's own retries of a refused create take no time."""
    monkeypatch.setattr(budget, "GROW_PERIOD_S", 0.5)
    url = faulty(capacity=2, retry_after=0)
    make = lambda: echo_module.EchoEnv(base_url=url, timeout=20.0)  # noqa: E731
    first, second, third_env, fourth_env = envs = [make() for _ in range(4)]
    for env in (first, second):
        env.reset(task_index=0)
    third = threading.Thread(target=third_env.reset, kwargs={"task_index": 0})
    third.start()
    assert wait_for(lambda: learned_window(echo_module, url) == 2)  # shrank to the 2 open
    refused = stats(url)["refused"]
    time.sleep(0.3)
    assert third.is_alive() and stats(url)["refused"] == refused  # queued, not asking again
    post(url, "/_fault/capacity?n=3&retry_after=0")
    third.join(5.0)  # the window grew by one after the calm period, and the env took the third
    assert not third.is_alive() and learned_window(echo_module, url) == 3 and stats(url)["refused_asks"] == 1
    fourth = threading.Thread(target=fourth_env.reset, kwargs={"task_index": 0})
    fourth.start()  # waits a calm period, grows the window to 4, is refused, shrinks it to 3 again
    assert wait_for(lambda: stats(url)["refused_asks"] == 2) and wait_for(lambda: learned_window(echo_module, url) == 3)
    first.get_reward()  # a slot frees: the queued fourth takes it
    fourth.join(5.0)
    assert not fourth.is_alive() and stats(url)["max_open"] == 3
    assert [env.error for env in envs] == [None] * 4
    for env in envs:
        env.get_reward()
    assert wait_for(lambda: stats(url)["open"] == 0)


def test_with_the_budget_at_the_limit_the_env_refuses_nothing(echo_module, faulty, monkeypatch):
    monkeypatch.setenv(budget.ENV_VAR, str(CAPACITY))
    url = faulty(capacity=CAPACITY)
    results = play(echo_module, url)
    assert [reward for reward, _ in results] == [1.0] * ROLLOUTS
    seen = stats(url)
    assert seen["refused"] == 0 and seen["max_open"] == CAPACITY and seen["created"] == ROLLOUTS
    assert wait_for(lambda: stats(url)["open"] == 0)


@pytest.mark.slow
def test_a_busy_env_past_the_timeout_ends_the_rollout_in_one_line_naming_the_knob(echo_module, faulty):
    url = faulty(capacity=1)
    holder = echo_module.EchoEnv(base_url=url)
    holder.reset(task_index=0)
    late = echo_module.EchoEnv(base_url=url, timeout=2.0)
    started = time.monotonic()
    text = late.reset(task_index=0)
    assert time.monotonic() - started < 8.0
    assert late.outcome == "env_error" and late.get_reward() is None
    assert "session limit" in late.error and "held 1" in late.error and budget.ENV_VAR in late.error
    assert "\n" not in late.error
    assert text.startswith("Error: the environment failed")
    holder.get_reward()


def test_a_slot_comes_back_however_the_rollout_ends(echo_module, faulty, monkeypatch):
    """Budget 1: each step below can only open a session if the previous owner gave the slot back
    (within 3 s: no slot in time is an error). The env has no limit of its own here: a session
    the env failed to delete must not hold the budget."""
    monkeypatch.setenv(budget.ENV_VAR, "1")
    url = faulty()
    make = lambda: echo_module.EchoEnv(base_url=url, timeout=3.0)  # noqa: E731
    env = make()
    env.reset(task_index=0)
    assert not copy.copy(env)._episode.open  # a copy holds no session, hence no slot
    env.echo(text="hello")  # finished: the env ended the episode
    other = make()
    assert not other.reset(task_index=0).startswith("Error"), other.error
    other.reset(task_index=1)  # the next reset gives back the slot it held
    assert other.outcome == "running", other.error
    del other
    gc.collect()  # collected with an open session
    env = make()
    assert not env.reset(task_index=0).startswith("Error"), env.error
    post(url, "/_fault/down")
    env.echo(text="hello")  # the env fails mid-rollout
    assert env.outcome == "env_error"
    post(url, "/_fault/up")
    env = make()
    assert not env.reset(task_index=0).startswith("Error"), env.error
    env.get_reward()
    assert stats(url)["refused"] == 0


def test_no_slot_within_the_timeout_is_an_unscored_rollout_not_a_request(echo_module, faulty, monkeypatch):
    monkeypatch.setenv(budget.ENV_VAR, "1")
    # The env could take a second session: only the budget may keep `late` from asking for one
    # (and a session an earlier test is still deleting cannot make the holder meet a 429).
    url = faulty(capacity=2)
    holder = echo_module.EchoEnv(base_url=url)
    holder.reset(task_index=0)
    assert holder.outcome == "running", holder.error
    late = echo_module.EchoEnv(base_url=url, timeout=0.5)
    late.reset(task_index=0)
    assert late.outcome == "env_error" and "slots" in late.error and budget.ENV_VAR in late.error
    assert stats(url)["refused"] == 0 and stats(url)["created"] == 1
    holder.get_reward()


def test_a_budget_smaller_than_the_run_is_an_error(echo_module, faulty, monkeypatch):
    monkeypatch.setenv(budget.ENV_VAR, "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    url = faulty()
    with pytest.raises(budget.BudgetError, match="smaller than the run's 2 processes"):
        echo_module.EchoEnv(base_url=url).reset(task_index=0)


def test_each_rank_takes_its_share_and_the_shares_add_up():
    assert [budget.share(10, 4, rank) for rank in range(4)] == [3, 3, 2, 2]
    assert [budget.share(4, 1, 0)] == [4]
    assert sum(budget.share(500, 8, rank) for rank in range(8)) == 500


def test_the_code_level_knob_wins_over_the_variable(echo_module, monkeypatch):
    monkeypatch.setenv(budget.ENV_VAR, "9")
    assert budget.run_limit(echo_module.EchoEnv) == 9
    try:
        set_max_sessions(3)  # as the docs spell it
        assert budget.run_limit(echo_module.EchoEnv) == 3
        budget.set_max_sessions(2, echo_module.EchoEnv)
        assert budget.run_limit(echo_module.EchoEnv) == 2
    finally:
        budget.set_max_sessions(None)
        budget.set_max_sessions(None, echo_module.EchoEnv)
    with pytest.raises(budget.BudgetError):
        budget.set_max_sessions(0)


def test_402_says_the_account_is_unfunded_in_one_line(echo_module, faulty):
    url = faulty(payment=True)
    env = echo_module.EchoEnv(base_url=url)
    env.reset(task_index=0)
    assert stats(url)["requests"] == 1  # not retried
    assert env.outcome == "env_error" and "402 Payment Required" in env.error and "credit" in env.error
    assert "\n" not in env.error


def test_the_breaker_stops_asking_a_failing_env_and_a_probe_closes_it(echo_module, faulty, monkeypatch):
    monkeypatch.setenv("ORLGEN_BREAKER_FAILURES", "3")
    monkeypatch.setenv("ORLGEN_BREAKER_COOLDOWN", "1")
    url = faulty()
    post(url, "/_fault/down")
    env = echo_module.EchoEnv(base_url=url, timeout=5.0)
    for _ in range(3):
        env.reset(task_index=0)
        assert env.outcome == "env_error" and "circuit open" not in env.error
    asked = stats(url)["requests"]
    for _ in range(5):  # open: ended at once, nothing sent
        env.reset(task_index=0)
        assert env.outcome == "env_error" and "circuit open" in env.error
    assert stats(url)["requests"] == asked
    post(url, "/_fault/up")
    time.sleep(1.1)  # the cool-down: the next reset is the probe
    assert env.reset(task_index=0) == "Call the echo tool with the text 'hello'."
    env.echo(text="hello")
    assert env.get_reward() == 1.0
    assert not env.reset(task_index=1).startswith("Error")  # closed again
    env.get_reward()
