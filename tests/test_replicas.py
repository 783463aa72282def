"""One env served by several replicas (`base_url=[...]`, or `ORLGEN_<NAME>_URL` with commas): two
real ORS servers on loopback, each wearing a ledger of which session asked it what
(`tests/support/servers/ledger.py`, a middleware that records and changes nothing).

What must hold: sessions spread over the replicas (fewest open first, ties in a rotating order);
every request of a session reaches the server that created it; a replica killed mid-run costs
no rollout (the next opening it gets fails over to the survivor, its breaker opens and it is
skipped) and comes back once it answers again; with every replica down a rollout ends with one
line; the configured session budget is the env's, all replicas together.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from orlgen.runtime import set_max_sessions
from orlgen.runtime.session import admission, breaker, budget
from orlgen.runtime.session.connection import Connection
from orlgen.serve import ServerProcess

from tests.support.envs.both import TASKS
from tests.support.servers import capacity
from tests.support.servers.both import BothServer
from tests.support.waiting import wait_for

LEDGER = ("tests.support.servers.ledger:Ledger",)
KIND = "openreward-sdk"


def ledger(server: BothServer) -> dict:
    with urllib.request.urlopen(f"{server.url}/_stats", timeout=10) as response:
        return json.loads(response.read())


def started(env, index: int) -> None:
    env.reset(task_index=index)
    assert env.outcome == "running", env.error


def finished(env, index: int) -> float | None:
    """The rest of a rollout on the open session: two calls, then the right answer."""
    target = TASKS["train"][index]["target"]
    assert env.guess(guess=target - 1) == "higher"
    assert env.count() == "1"
    assert env.submit(answer=target) == "correct"
    return env.get_reward()


def played(env, index: int) -> float | None:
    started(env, index)
    return finished(env, index)


def replica_of(env) -> str:
    return admission.pinned(env._episode.connection, env._episode._session).url


@pytest.fixture(scope="module")
def pair():
    """Two replicas of the both-env, each with its ledger, shared by this file's tests (a server
    takes seconds to start on a busy machine); the test that kills them comes last."""
    with BothServer(KIND, LEDGER) as a, BothServer(KIND, LEDGER) as b:
        yield a, b


@pytest.fixture
def fresh(both_module):
    """Breakers and budgets made anew for each test, and no budget set for the both-env's class."""
    budget.forget()
    breaker.forget()
    yield
    set_max_sessions(None, both_module.BothEnv)
    budget.forget()
    breaker.forget()


def _index(env) -> int:
    return env._episode.task[1]


def test_the_budget_is_the_envs_across_replicas(both_module, pair, fresh):
    """`set_max_sessions(2)` with two replicas: two sessions in all, not two per replica."""
    a, b = pair
    created = len(ledger(a)["created"]) + len(ledger(b)["created"])
    set_max_sessions(2, both_module.BothEnv)
    envs = [both_module.BothEnv(base_url=[a.url, b.url], timeout=0.5) for _ in range(3)]
    started(envs[0], 0)
    started(envs[1], 1)
    envs[2].reset(task_index=2)
    assert envs[2].outcome == "env_error" and "session slots" in envs[2].error
    assert finished(envs[0], 0) == 1.0  # its slot comes back
    assert played(envs[2], 2) == 1.0 and finished(envs[1], 1) == 1.0
    assert len(ledger(a)["created"]) + len(ledger(b)["created"]) - created == 3


@pytest.mark.slow
def test_each_replica_learns_its_own_capacity(echo_module, fresh, monkeypatch):
    """Replica a takes 1 session at once, b 4 (FAULT INJECTION: the capacity middleware of
    tests/support/servers/capacity.py answers 429 past it). Five rollouts at once: a refuses
    what it cannot take, learns its window of 1, and those rollouts are opened on b instead of
    waiting for a; every rollout is scored."""
    entry = "tests.support.servers.capacity"
    # A learned window grows by one after GROW_PERIOD_S without a refusal: a loaded machine can
    # take that long over these rollouts, so the window is read before it may grow.
    monkeypatch.setattr(budget, "GROW_PERIOD_S", 3600.0)
    with ServerProcess("examples.echo:Echo", entry=entry) as a, ServerProcess("examples.echo:Echo", entry=entry) as b:
        capacity.post(a.url, "/_fault/capacity?n=1")
        capacity.post(b.url, "/_fault/capacity?n=4")
        barrier = threading.Barrier(5)

        def rollout(env):
            barrier.wait()
            env.reset(task_index=0)
            time.sleep(0.3)  # the model generating: the session stays open meanwhile
            env.echo(text="hello")
            return env.get_reward(), env.error

        envs = [echo_module.EchoEnv(base_url=[a.url, b.url], timeout=60) for _ in range(5)]
        with ThreadPoolExecutor(5) as pool:
            results = list(pool.map(rollout, envs))
        assert [error for _, error in results] == [None] * 5 and None not in [reward for reward, _ in results]
        on_a, on_b = capacity.stats(a.url), capacity.stats(b.url)
        assert (
            on_a["refused"] >= 1 and on_a["max_open"] == on_a["created"] == 1
        )  # the picks alternate: a is asked twice or more
        assert on_b["refused"] == 0 and on_b["created"] == 4
        windows = [budget.for_env((url, "echo"), None, configured=False).window for url in (a.url, b.url)]
        # Learned per replica: b never refused, a did. a's window is what this process held there
        # when a refusal came back: its one session, and another opening still in flight at that
        # moment when the picks sent two at once (the server itself never had more than 1 open).
        assert windows[1] is None and windows[0] in (1, 2), windows


@pytest.mark.slow
def test_a_replica_filled_by_another_client_hands_the_rollout_to_the_pool(echo_module, fresh, monkeypatch):
    """Replica a takes 1 session at once (FAULT INJECTION: the capacity middleware answers 429
    past it, `Retry-After: 1`) and another client holds it: a session opened straight through the
    ORS client, outside this pool and its budgets. This process holds nothing on a, so a's refusal
    teaches no window; still the rollout goes to b at once (a is asked once, not until the
    timeout), and a is ranked full for a while: the next rollout does not ask it again."""
    entry = "tests.support.servers.capacity"
    with ServerProcess("examples.echo:Echo", entry=entry) as a, ServerProcess("examples.echo:Echo", entry=entry) as b:
        capacity.post(a.url, "/_fault/capacity?n=1")
        other = Connection(url=a.url, catalog=None, env="echo", api_key=None)
        held = other.run(lambda client: client.open_session(split="train", index=0), 30)
        # A small timeout: were a asked again and again, the rollout would end unscored in 5 s.
        env = echo_module.EchoEnv(base_url=[a.url, b.url], timeout=5)

        def rollout():
            env.reset(task_index=0)  # the first pick of a fresh pool is a (the turn starts there)
            env.echo(text="hello")
            return env.get_reward(), env.error

        assert rollout()[1] is None and rollout()[1] is None
        assert env.get_reward() is not None
        on_a, on_b = capacity.stats(a.url), capacity.stats(b.url)
        assert on_a["refused"] == 1 and on_a["created"] == 1  # asked once, by the first rollout
        assert on_b["created"] == 2 and on_b["refused"] == 0
        assert budget.for_env((a.url, "echo"), None, configured=False).window is None  # nothing to learn

        # The other client leaves and a's while is over: a takes sessions again.
        other.run(lambda client: held.delete(), 10)
        monkeypatch.setattr(budget, "GROW_PERIOD_S", 0.0)
        assert [rollout()[1] for _ in range(2)] == [None, None]
        on_a = capacity.stats(a.url)
        assert on_a["created"] == 2 and on_a["refused"] == 1 and capacity.stats(b.url)["created"] == 3


@pytest.mark.slow
def test_sessions_spread_pinned_and_a_killed_replica_costs_no_rollout(both_module, pair, fresh):
    a, b = pair  # their ledgers hold what earlier tests of this file left: counted from here
    pool = [a.url, b.url]
    start_a, start_b = len(ledger(a)["created"]), len(ledger(b)["created"])
    # Four rollouts open at once: the fewest-open replica takes each, two apiece.
    envs = [both_module.BothEnv(base_url=pool, timeout=60) for _ in range(4)]
    for index, env in enumerate(envs):
        started(env, index)
    picks = [replica_of(env) for env in envs]
    assert sorted(picks) == sorted(pool * 2) and picks[0] == picks[2] != picks[1] == picks[3]
    assert [finished(env, index) for index, env in enumerate(envs)] == [1.0] * 4
    # Serial rollouts (nothing open at each pick): the rotating order alternates.
    serial = both_module.BothEnv(base_url=pool, timeout=60)
    picks = []
    for index in range(4):
        started(serial, index)
        picks.append(replica_of(serial))
        assert finished(serial, index) == 1.0
    assert sorted(picks) == sorted([a.url, b.url] * 2) and picks[0] != picks[1]

    # Mid-run: a rollout is open on b when a is killed; it goes on, and so does the run.
    first, second = both_module.BothEnv(base_url=pool, timeout=60), both_module.BothEnv(base_url=pool, timeout=60)
    started(first, 0)
    started(second, 1)
    on_a, on_b = (first, second) if replica_of(first) == a.url else (second, first)
    assert replica_of(on_b) == b.url and replica_of(on_a) == a.url
    assert finished(on_a, _index(on_a)) == 1.0
    before = ledger(a)
    a.process.stop()
    assert finished(on_b, _index(on_b)) == 1.0
    rewards = [played(serial, index % 6) for index in range(6)]
    assert rewards == [1.0] * 6, serial.error  # nothing lost: the survivor took every one
    assert breaker.for_env((a.url, "both")).state == "open"
    after_b = ledger(b)

    # Pinned: each session's every request reached the server that created it, and only it.
    assert set(before["created"]).isdisjoint(after_b["created"])
    for stats in (before, after_b):
        assert set(stats["requests"]) == set(stats["created"])
        assert all(stats["calls"].get(sid, 0) >= 1 for sid in stats["created"])
    assert len(before["created"]) - start_a == 2 + 2 + 1  # the concurrent pair, the serial pair, `on_a`
    assert len(after_b["created"]) - start_b == 2 + 2 + 1 + 6

    # Back: a's breaker closes once its health probe is answered, and it takes sessions again.
    a.start()
    assert wait_for(lambda: breaker.for_env((a.url, "both")).state == "closed", 15)
    assert [played(serial, index) for index in range(2)] == [1.0, 1.0]
    assert len(ledger(a)["created"]) == 1

    # Every replica down: the first rollout tries each, then one line; the next ends at once.
    a.process.stop()
    b.process.stop()
    serial.reset(task_index=0)
    assert serial.outcome == "env_error" and "\n" not in serial.error
    assert "ServerGone" in serial.error
    serial.reset(task_index=0)
    assert serial.outcome == "env_error" and "\n" not in serial.error
    assert "every replica (2) is refused" in serial.error


def test_a_pool_from_the_variable_and_its_credentials_never_shown(monkeypatch):
    from orlgen.runtime.data.spec import Target

    target = Target(kind="url", value="http://127.0.0.1:9", env="both")
    monkeypatch.setenv("ORLGEN_BOTH_URL", "http://user:pw1@10.0.0.1:8000/, http://10.0.0.2:8000?token=tk2")
    pool = Connection.resolve(target, "ORLGEN_BOTH_URL", None, None)
    assert pool.replicas == ("http://user:pw1@10.0.0.1:8000", "http://10.0.0.2:8000?token=tk2")
    assert pool.url is None and pool.trusted
    for shown in (repr(pool), pool.address):
        assert "pw1" not in shown and "tk2" not in shown and "10.0.0.2:8000" in shown
    one = Connection.resolve(target, "ORLGEN_BOTH_URL", "http://10.0.0.3:8000/?a=1,2", None)
    assert one.replicas == () and one.url == "http://10.0.0.3:8000/?a=1,2"  # a comma inside one URL stays


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_dead_replicas_are_said_without_their_credentials(both_module, fresh, caplog):
    """Two replicas that refuse connections, their URLs carrying a password and a token: the
    rollout ends with one line, and neither that line nor any log line shows either."""
    pool = [f"http://user:pw1@127.0.0.1:{_closed_port()}", f"http://127.0.0.1:{_closed_port()}/?token=tk2"]
    env = both_module.BothEnv(base_url=pool, timeout=30)
    with caplog.at_level("WARNING", logger="orlgen"):
        env.reset(task_index=0)
    assert env.outcome == "env_error" and "\n" not in env.error
    said = [record.getMessage() for record in caplog.records] + [env.error, repr(env)]
    assert sum("replica http://127.0.0.1:" in line for line in said) == 2  # each replica's breaker, once
    assert not any("pw1" in line or "tk2" in line for line in said), said
