"""Rollouts through generated adapters against real ORS servers: every test runs on both ORS
implementations (`ors_kind`: the openreward SDK's `Server` and ors-sdk's `ors.Server`), the envs
written once for the SDK (ors-sdk serves them through `tests/support/envs/ors_port.py`)."""

from __future__ import annotations

import time

import pytest
from orlgen.runtime.trl.tools import tool_methods

from examples.helpdesk import scripted_solution
from tests.support.servers.both import server_process


@pytest.fixture
def echo_url(serve):
    return serve("examples.echo:Echo")


@pytest.fixture
def helpdesk_url(serve):
    return serve("examples.helpdesk:Helpdesk")


@pytest.fixture
def recording_url(serve):
    return serve("tests.support.envs.recording:Recording")


def by_wire_name(env) -> dict:
    """The tool methods by wire name, found as TRL finds them: the class's public functions."""
    return {method.__name__: method for method in tool_methods(env)}


def test_scripted_echo_rollout_wins(echo_module, echo_url):
    env = echo_module.EchoEnv(base_url=echo_url)
    row = echo_module.build_dataset(num_tasks=1)[0]
    assert row["target"] in env.reset(**row)
    assert env.echo(text=row["target"]) == "correct"
    assert (env.reward, env.rewards, env.finished, env.outcome) == (1.0, [1.0], True, "finished")
    assert env.get_reward() == 1.0


def test_wrong_answer_scores_zero_and_state_resets(echo_module, echo_url):
    env = echo_module.EchoEnv(base_url=echo_url)
    env.reset(**echo_module.build_dataset(indices=[1])[0])
    assert env.echo(text="nope").startswith("wrong")
    assert (env.reward, env.finished) == (0.0, True)
    env.reset(**echo_module.build_dataset(indices=[2])[0])
    assert (env.reward, env.rewards, env.finished, env.outcome) == (None, [], False, "running")


def test_task_only_tool_and_model_errors_keep_the_rollout_alive(echo_module, echo_url):
    env = echo_module.EchoEnv(base_url=echo_url)
    row = echo_module.build_dataset(indices=[0])[0]
    env.reset(**row)
    assert "It starts with 'h'" in env.hint()
    bad = env.echo(text=123)
    assert bad.startswith("Error: invalid arguments for echo: text:")
    assert env.rewards == [None] and not env.finished  # the bad call never reached the server
    assert env.echo(text=row["target"]) == "correct"
    after = env.echo(text=row["target"])
    assert after.startswith("Error:") and "over" in after
    assert env.reward == 1.0


def test_call_before_reset_is_a_readable_error(echo_module, echo_url):
    env = echo_module.EchoEnv(base_url=echo_url)
    assert env.echo(text="x").startswith("Error: echo was not run: no episode is running")


def test_only_given_arguments_are_sent_under_wire_names(recording_module, recording_url):
    env = recording_module.RecordingEnv(base_url=recording_url)
    env.reset(task_index=0)
    assert env.record(query="x") == "[('query', 'x')]"
    sent = env.record(query="x", limit=3, from_="a", file_path="b", mode="fast")
    assert sent == "[('file-path', 'b'), ('from', 'a'), ('limit', 3), ('mode', 'fast'), ('query', 'x')]"
    assert env.reward == 0.5


def test_the_wire_name_is_accepted_and_defaults_are_left_to_the_server(recording_module, recording_url):
    """A model trained on the raw schema calls with `from=`; a value equal to the schema's
    default (`limit=10`, `mode=None`) is not sent, so the server applies its own default."""
    env = recording_module.RecordingEnv(base_url=recording_url)
    env.reset(task_index=0)
    assert (
        env.record(**{"query": "x", "from": "a", "file-path": "b"})
        == "[('file-path', 'b'), ('from', 'a'), ('query', 'x')]"
    )
    assert env.record(query="x", limit=10, mode=None) == "[('query', 'x')]"


def test_constraint_violation_is_caught_before_the_wire(recording_module, recording_url):
    env = recording_module.RecordingEnv(base_url=recording_url)
    env.reset(task_index=0)
    assert (
        env.record(query="x", limit=0)
        == "Error: invalid arguments for record: limit: Input should be greater than or equal to 1"
    )
    assert env.rewards == []


@pytest.mark.parametrize("index", [0, 7, 42, 123, 299])
def test_helpdesk_full_episode(helpdesk_module, helpdesk_url, index):
    env = helpdesk_module.HelpdeskEnv(base_url=helpdesk_url)
    tools = by_wire_name(env)
    row = helpdesk_module.build_dataset("train", indices=[index])[0]
    assert row["ticket_id"] in env.reset(**row)
    spec = helpdesk_module.SPEC.dataset.captured("train")[index]
    for name, arguments in scripted_solution(spec):
        output = tools[name](**arguments)
        assert not output.startswith("Error:"), (name, output)
    assert (env.reward, env.finished, env.outcome) == (1.0, True, "finished")


def test_crashing_tool_ends_the_rollout_unscored(recording_module, recording_url):
    env = recording_module.RecordingEnv(base_url=recording_url)
    env.reset(task_index=0)
    env.record(query="x")
    text = env.crash()
    assert text.startswith("Error: the environment failed") and "tool crashed on purpose" in text
    assert (env.outcome, env.finished, env.reward) == ("env_error", True, None)
    assert env.get_reward() is None
    assert env.record(query="x").startswith("Error:")
    env.reset(task_index=1)  # the same adapter recovers on the next rollout
    assert env.outcome == "running" and env.record(query="y") == "[('query', 'y')]"


@pytest.mark.slow
def test_dead_server_at_reset_is_a_string_not_an_exception(echo_module, ors_kind):
    server = server_process(ors_kind, "examples.echo:Echo").start()
    url = server.url
    server.stop()
    env = echo_module.EchoEnv(base_url=url)
    started = time.monotonic()
    prompt = env.reset(**echo_module.build_dataset(num_tasks=1)[0])
    assert prompt.startswith("Error: the environment failed (could not start task train[0]")
    assert (env.outcome, env.finished, env.reward) == ("env_error", True, None)
    assert time.monotonic() - started < 30
