"""TRL's rollout loop, stated once in the runtime (`orlgen.runtime.trl.rollout`): one rollout of a
generated adapter played as GRPOTrainer plays it, the model's turns from any callable.

Real ORS server of the echo example on loopback, the checked-in generated module; the model is a
plain function here (a script of turns), since what is tested is the loop around it.
"""

from __future__ import annotations

import re

import pytest
from orlgen.runtime.trl.rollout import Limits, TrlRollout, trl_prompt
from orlgen.runtime.trl.tools import tool_methods


def echo_call(text: str, index: int = 0) -> dict:
    return {"id": f"call_{index}", "type": "function", "function": {"name": "echo", "arguments": {"text": text}}}


def target_of(messages: list[dict]) -> str:
    match = re.search(r"with the text '(.*)'\.", messages[-1]["content"])
    assert match, messages
    return match.group(1)


def test_a_rollout_is_played_as_grpo_trainer_plays_it(echo_module, echo_url):
    row = echo_module.build_dataset(num_tasks=1)[0]
    env = echo_module.EchoEnv(base_url=echo_url)
    seen: list[tuple[list[dict], list[str]]] = []

    def model(messages, tools):
        seen.append(([dict(m) for m in messages], [tool.__name__ for tool in tools]))
        return {"role": "assistant", "content": "", "tool_calls": [echo_call(target_of(messages))]}

    played = TrlRollout(env, row, reward_funcs=list(echo_module.reward_funcs)).play(model)

    (first_turn,) = seen  # the env ended the episode at its first call: no second turn
    prompt = first_turn[0]
    assert len(prompt) == len(row["prompt"]) and "with the text 'hello'" in prompt[-1]["content"]  # reset's text
    assert first_turn[1] == [tool.__name__ for tool in tool_methods(env)] == ["echo", "hint"]
    assert played.messages[: len(prompt)] == prompt and played.messages[-1]["role"] == "tool"
    assert played.messages[-1] == {"role": "tool", "name": "echo", "content": "correct", "tool_call_id": "call_0"}
    assert (played.reward, played.stop, played.turns, played.tool_calls, played.tool_errors) == (
        1.0, "episode_over", 1, 1, 0,
    )  # fmt: skip
    assert env.outcome == "finished" and set(played.timings) >= {"reset_s", "model_s", "tools_s", "score_s"}


def test_calls_past_the_cap_and_broken_calls_are_answered_and_counted(echo_module, echo_url):
    row = echo_module.build_dataset(num_tasks=1)[0]
    env = echo_module.EchoEnv(base_url=echo_url)
    turns = iter(
        [
            [{"type": "function", "function": {"name": "shout", "arguments": {}}}, echo_call("x"), echo_call("y")],
            [{"type": "function", "function": {"name": "echo", "arguments": "{not json"}}],
        ]
    )

    def model(messages, tools):
        calls = next(turns, [])
        return {"role": "assistant", "content": "", **({"tool_calls": calls} if calls else {})}

    played = TrlRollout(env, row, [], Limits(max_turns=5, max_tool_calls=1)).play(model)
    answers = [m["content"] for m in played.messages if m["role"] == "tool"]
    assert answers[0] == "{'error': 'Tool shout not found.'}"  # the one call kept of three
    assert answers[1].startswith("{'error': 'arguments of echo are not a JSON object")
    assert (played.turns, played.tool_calls, played.tool_errors, played.stop) == (3, 4, 4, "answered")
    assert played.reward is None and env.outcome == "running"  # no call reached the env: unscored


def test_a_failing_model_turn_raises_and_frees_the_session(echo_module, echo_url):
    row = echo_module.build_dataset(num_tasks=1)[0]
    env = echo_module.EchoEnv(base_url=echo_url)
    played = TrlRollout(env, row, [])

    def model(messages, tools):
        raise ConnectionResetError("the endpoint went away")

    with pytest.raises(ConnectionResetError):
        played.play(model)
    assert played.stop == "failed" and played.reward is None and played.turns == 0
    assert played.messages and not env._episode.open  # the conversation so far is kept; the session is gone


def test_the_prompt_takes_reset_text_or_parts_as_trl_appends_them():
    row = {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "task: "}]}
    assert trl_prompt(row, "do it")[-1] == {"role": "user", "content": "task: do it"}
    image = {"type": "image", "image": "x"}
    assert trl_prompt(row, [image])[-1]["content"] == [{"type": "text", "text": "task: "}, image]
    assert trl_prompt(row, None) == row["prompt"] and trl_prompt(row, "x") is not row["prompt"]
