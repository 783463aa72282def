"""A hostile runtime server: every value a server sends is validated before the adapter records it.

`tests/support/envs/wire.py:Wire` is served by the real SDK server under `tests/support/servers/wire.py`, whose ASGI
middleware (FAULT INJECTION) rewrites its answers into the malformed values the SDK's own
pydantic models refuse to build server-side: a reward `[1.0]`, `{...}`, `"abc"`, `"inf"`, NaN, a
bool; `finished: "false"`; a text block holding an int; and so on (`CASES`). A reward beyond
float32's range (1e39) the SDK lets an env send as is, so the env sends that one itself. Every such
answer ends the rollout as an environment error: the trainer-facing functions return, the rollout
is unscored, the server's session is deleted, and one log line names the env, the tool and the value.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
from orlgen.serve import ServerProcess

from tests.support.envs.wire import LONG_OUTPUT
from tests.support.models.tiny_qwen3 import teach
from tests.support.modules import generated
from tests.support.servers.wire import CASES
from tests.support.training import answer_ids, first_turn_ids, make_trainer

# case → how the log line quotes the value
QUOTED = {
    "reward-list": "reward [1.0] is not a number",
    "reward-dict": "reward {'score': 1.0} is not a number",
    "reward-string": "reward 'abc' is not a number",
    "reward-inf-string": "reward 'inf' is not a number",
    "reward-nan-string": "reward 'nan' is not a number",
    "reward-inf": "reward inf is not a finite number within float32 range",
    "reward-nan": "reward nan is not a finite number within float32 range",
    "reward-bool": "reward True is not a number",
    "huge": "reward 1e+39 is not a finite number within float32 range",
    "finished-string": "finished 'false' is not a bool",
    "finished-int": "finished 1 is not a bool",
    "text-int": "a text block's text 5 is not a string",
    "image-data-int": "an image block's data 7 is not a string",
    "reasoning-block": "block ReasoningBlock(text='not a tool output block'",
    "metadata-list": "metadata [1, 2] is not an object",
}
assert set(QUOTED) == {*CASES, "huge"}


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    return generated("tests.support.envs.wire:Wire", tmp_path_factory.mktemp("wire"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    count_file = tmp_path_factory.mktemp("counts") / "counts.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORLGEN_COUNT_FILE", str(count_file))
        process = ServerProcess("tests.support.envs.wire:Wire", entry="tests.support.servers.wire").start()
    process.counts = lambda: json.loads(count_file.read_text()) if count_file.exists() else {"opened": 0, "closed": 0}
    yield process
    process.stop()


def all_sessions_deleted(server, seconds=10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        counts = server.counts()
        if counts["opened"] == counts["closed"]:
            return True
        time.sleep(0.05)
    return False


def started(wire, server, index=0, **options):
    env = wire.WireEnv(base_url=server.url, **options)
    env.reset(task_index=index)
    assert env.outcome == "running", env.error
    return env


def orlgen_lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "orlgen"]


def assert_environment_error(env, server, caplog, what: str, case: str) -> None:
    assert (env.outcome, env.finished, env.reward, env._episode.open) == ("env_error", True, None, False)
    assert env.get_reward() is None, "unscored"
    lines = orlgen_lines(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"WireEnv: {what} answered badly: WireError: ") and QUOTED[case] in lines[0]
    assert all_sessions_deleted(server)


@pytest.mark.parametrize("case", sorted(QUOTED))
def test_a_malformed_tool_answer_ends_the_rollout_unscored(wire, server, caplog, case):
    env = started(wire, server)
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        answer = env.step(case=case)
    assert answer.startswith("Error: the environment failed (tool step answered badly: WireError: ")
    assert answer.endswith("the episode is over.")
    assert_environment_error(env, server, caplog, "tool step", case)
    assert env.step(case="ok").startswith("Error: step was not run: the episode is over")


@pytest.mark.parametrize("case", sorted(c for c in QUOTED if c != "huge"))
def test_a_malformed_terminal_answer_leaves_the_reward_functions_standing(wire, server, caplog, case):
    env = started(wire, server)
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        rewards = [
            func(environments=[env], completions=[[{"role": "assistant", "content": case}]])
            for func in wire.reward_funcs
        ]
    assert rewards == [[None]]
    assert_environment_error(env, server, caplog, "tool submit", case)


def test_a_malformed_prompt_ends_the_rollout_at_reset(wire, server, caplog):
    env = wire.WireEnv(base_url=server.url)
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        prompt = env.reset(task_index=3)
    assert prompt.startswith("Error: the environment failed (the prompt of task train[3] answered badly")
    assert (env.outcome, env.reward, env._episode.open) == ("env_error", None, False)
    assert orlgen_lines(caplog) == [
        "WireEnv: the prompt of task train[3] answered badly: WireError: a text block's text 5 is not a string"
    ]
    assert all_sessions_deleted(server)


def test_a_tool_output_is_cut_to_its_bound_with_a_marker(wire, server, monkeypatch):
    marker = "\n[output cut: {} more characters (max_output_chars={})]"
    given = started(wire, server, max_output_chars=1000).step(case="long")
    assert given == "x" * 1000 + marker.format(LONG_OUTPUT - 1000, 1000)
    assert len(started(wire, server).step(case="long")) < 100_100  # the default bound: 100,000
    monkeypatch.setenv("ORLGEN_MAX_OUTPUT_CHARS", "2000")
    env = started(wire, server)
    assert env.step(case="long") == "x" * 2000 + marker.format(LONG_OUTPUT - 2000, 2000)
    assert (env.outcome, env.rewards) == ("running", [0.5])  # a long answer is no error
    # a refusal's text (the server's error detail) reaches the model bounded too
    refused = env.step(case="long-refusal")
    assert refused.startswith("Error: step was not run (input_validation): yyy")
    assert refused.endswith(marker.format(LONG_OUTPUT - 2000, 2000)) and env.outcome == "running"
    with pytest.raises(ValueError, match="max_output_chars=0 is not a positive integer"):
        wire.WireEnv(base_url=server.url, max_output_chars=0)


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_grpo_training_survives_a_malformed_terminal_reward(wire, server, tiny_model_path, tmp_path, caplog):
    """One GRPO step on tasks 0 and 1, 2 generations each. The tiny model is taught to answer task 0
    with `reward-list` (the terminal tool's reward then arrives as `[1.0]`, which used to raise a
    TypeError out of `reward_funcs` and end training) and task 1 with `ok` (graded 1.0). Training
    completes; task 0's rollouts are unscored environment errors, task 1's score 1.0."""
    rows = wire.build_dataset(indices=[0, 1])
    trainer, factory = make_trainer(tiny_model_path, wire, server.url, rows, tmp_path, temperature=0.5)
    examples = []
    for row, answer in zip(rows, ["reward-list", "ok"], strict=True):
        env = wire.WireEnv(base_url=server.url)
        prompt_ids = first_turn_ids(trainer, row, env.reset(**row))
        env.get_reward()
        examples.append((prompt_ids, answer_ids(trainer.processing_class, answer)))
    assert teach(trainer.model, examples) < 0.05

    with caplog.at_level(logging.WARNING, logger="orlgen"):
        trainer.train()

    assert len(factory.created) == 4  # one per rollout (the first also served TRL's tool discovery)
    outcomes = sorted((env.outcome, env.get_reward()) for env in factory.created)
    assert outcomes == [("env_error", None), ("env_error", None), ("finished", 1.0), ("finished", 1.0)]
    assert all(not env._episode.open for env in factory.created)
    assert (
        sum(
            "tool submit answered badly: WireError: reward [1.0] is not a number" in line
            for line in orlgen_lines(caplog)
        )
        == 2
    )
    metrics = trainer.state.log_history[0]
    assert metrics["rewards/WireEnv/mean"] == pytest.approx(1.0)  # the mean over scored rollouts
    assert all_sessions_deleted(server)
