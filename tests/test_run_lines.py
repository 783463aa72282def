"""Issue 43, the run's lines: a training run pointed at a dead environment says so, once, and the
deployment a snapshot recorded can be pinned at run time (`on_deployment_change`).

Real servers on loopback throughout: a dead env is a server process that was started and
stopped (nothing listens on its port); a redeployed env is the counting env served with
`OPENREWARD_BUILD_SHA` set (the SDK's server reports it at `/version`), against an adapter class
whose `EnvSpec` records another build, as a snapshot captured from the earlier build would.
"""

from __future__ import annotations

import dataclasses
import json
import logging

import pytest
from orlgen.runtime import log as runtime_log
from orlgen.runtime.session import breaker
from orlgen.runtime.trl import adapter as runtime_adapter
from orlgen.serve import ServerProcess

from tests.support.modules import generated

SERVED_BUILD = "bbb222"
POLICY_VAR = "ORLGEN_ON_DEPLOYMENT_CHANGE"


def orlgen_lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "orlgen"]


@pytest.fixture
def fresh_process_state(monkeypatch):
    """Each env starts with a closed breaker and nothing said yet (both are per process)."""
    monkeypatch.setattr(runtime_log, "_logged", set())
    breaker.forget()
    yield
    breaker.forget()


# -- 1: a dead environment ------------------------------------------------------------------------


@pytest.fixture
def dead_url():
    """The address of an echo server that was started and then stopped: nothing listens there."""
    server = ServerProcess("examples.echo:Echo").start()
    server.stop()
    return server.url


@pytest.mark.slow  # a server started and stopped; the first reset meets 2 s of refused connections
def test_a_dead_env_says_unscored_and_breaker_open_once_each(echo_module, dead_url, fresh_process_state, caplog):
    address = dead_url.replace("http://", "http://alice:s3cret-pw@")  # credentials in the address
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        for index in (0, 1):
            env = echo_module.EchoEnv(base_url=address)
            assert env.reset(task_index=index).startswith("Error: the environment failed")
            assert (env.outcome, env.get_reward()) == ("env_error", None)
    lines = orlgen_lines(caplog)
    unscored = [line for line in lines if "unscored" in line]
    opened = [line for line in lines if "circuit open" in line]
    assert len(unscored) == 1 and len(opened) == 1, lines
    assert len(lines) == 2, lines  # nothing else: the second rollout adds no line
    for line in (*unscored, *opened):
        assert "EchoEnv" in line and dead_url in line, line  # the env: its class and address
        assert "s3cret-pw" not in line and "alice" not in line, line
        assert "refuses connections" in line, line  # the cause
    assert "could not start task train[0]" in unscored[0]  # the first rollout's own failure


# -- 2: the deployment pinned at run time ---------------------------------------------------------


@pytest.fixture(scope="module")
def counting(tmp_path_factory):
    return generated("tests.support.envs.counting:Counting", tmp_path_factory.mktemp("runlines_counting"))


@pytest.fixture(scope="module")
def redeployed(tmp_path_factory):
    """The counting env served as build `SERVED_BUILD`; `.counts()` is its view of our sessions."""
    count_file = tmp_path_factory.mktemp("runlines_counts") / "counts.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENREWARD_BUILD_SHA", SERVED_BUILD)
        patch.setenv("ORLGEN_COUNT_FILE", str(count_file))
        server = ServerProcess("tests.support.envs.counting:Counting").start()
    server.counts = lambda: json.loads(count_file.read_text()) if count_file.exists() else {"opened": 0, "closed": 0}
    try:
        yield server
    finally:
        server.stop()


def pinned(counting, build: str) -> type:
    """A fresh adapter class (the checks are once per process and class) whose snapshot recorded `build`."""
    spec = dataclasses.replace(counting.SPEC, deployment={"build_sha": build})

    class PinnedEnv(counting.CountingEnv, spec=spec):
        pass

    return PinnedEnv


@pytest.fixture
def no_policy_variable(monkeypatch):
    monkeypatch.delenv(POLICY_VAR, raising=False)


@pytest.mark.slow  # a captured module and a server process
@pytest.mark.usefixtures("no_policy_variable")
def test_warn_logs_one_line_and_the_rollouts_go_on(counting, redeployed, caplog):
    env_class = pinned(counting, "aaa111")
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        for index in (0, 1):
            env = env_class(base_url=redeployed.url, on_deployment_change="warn")
            assert env.reset(task_index=index) == f"counting task {index}", env.error
            assert env.finish() == "finished" and env.get_reward() == 1.0
    [line] = orlgen_lines(caplog)
    assert line.startswith("PinnedEnv: same schema, new deployment of the environment (build aaa111 → bbb222)")


@pytest.mark.slow
@pytest.mark.usefixtures("no_policy_variable")
def test_refuse_ends_the_rollout_and_every_later_one_of_the_class(counting, redeployed, caplog):
    env_class = pinned(counting, "aaa111")
    opened = redeployed.counts()["opened"]
    refusal = r"PinnedEnv: the environment's deployment changed since the snapshot \(build aaa111 → bbb222\)"
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        env = env_class(base_url=redeployed.url, on_deployment_change="refuse")
        with pytest.raises(runtime_adapter.DeploymentChanged, match=refusal):
            env.reset(task_index=0)
        assert redeployed.counts()["opened"] == opened + 1  # the session the check ran in
        for later in (env, env_class(base_url=redeployed.url, on_deployment_change="refuse")):
            with pytest.raises(runtime_adapter.DeploymentChanged, match=refusal):
                later.reset(task_index=1)
    assert redeployed.counts()["opened"] == opened + 1  # a refused class opens no session again
    assert issubclass(runtime_adapter.DeploymentChanged, runtime_adapter.DriftError)  # caught as drift is
    assert orlgen_lines(caplog) == []  # the refusal is the line: nothing logged beside it


@pytest.mark.slow
def test_the_variable_sets_the_policy(counting, redeployed, monkeypatch):
    monkeypatch.setenv(POLICY_VAR, "refuse")
    with pytest.raises(runtime_adapter.DeploymentChanged, match=r"\(build aaa111 → bbb222\)"):
        pinned(counting, "aaa111")(base_url=redeployed.url, on_drift="ignore").reset(task_index=0)  # pinned apart
    env = pinned(counting, "aaa111")(base_url=redeployed.url, on_deployment_change="warn")  # the option wins
    assert env.reset(task_index=0) == "counting task 0", env.error


@pytest.mark.slow
def test_the_same_deployment_says_nothing_even_under_refuse(counting, redeployed, caplog, monkeypatch):
    monkeypatch.setenv(POLICY_VAR, "refuse")
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        for options in ({}, {"on_deployment_change": "refuse"}, {"on_drift": "ignore"}):
            env = pinned(counting, SERVED_BUILD)(base_url=redeployed.url, **options)
            assert env.reset(task_index=0) == "counting task 0", env.error
            env.get_reward()
    assert orlgen_lines(caplog) == []


def test_a_wrong_policy_is_one_clear_line(echo_module, monkeypatch):
    monkeypatch.delenv(POLICY_VAR, raising=False)
    with pytest.raises(ValueError, match=r"^on_deployment_change='strict' is not 'warn' or 'refuse'$"):
        echo_module.EchoEnv(base_url="http://127.0.0.1:9", on_deployment_change="strict")
    monkeypatch.setenv(POLICY_VAR, "nope")
    with pytest.raises(ValueError, match=rf"^{POLICY_VAR}='nope' is not 'warn' or 'refuse'$"):
        echo_module.EchoEnv(base_url="http://127.0.0.1:9")
