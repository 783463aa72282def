"""Terminal tools: an env declaring `@terminal` grades the model's final plain message.

`examples/quiz.py` is written like a published env: a `lookup` tool, and a hidden terminal tool
`submit` that grades the answer. The generated module's `reward_funcs` hands each unfinished
rollout's final assistant message to it; `get_reward()` then returns its verdict. Real server,
real SDK sessions, and a real GRPOTrainer step."""

from __future__ import annotations

import logging

import pytest
from orlgen.runtime import final_message, submit_final_message, summed_reward
from orlgen.serve import ServerProcess

from tests.support.models.tiny_qwen3 import teach
from tests.support.modules import generated
from tests.support.training import answer_ids, first_turn_ids, make_trainer


@pytest.fixture(scope="module")
def quiz(tmp_path_factory):
    return generated("examples.quiz:Quiz", tmp_path_factory.mktemp("quiz"))


@pytest.fixture(scope="module")
def quiz_url():
    with ServerProcess("examples.quiz:Quiz") as server:
        yield server.url


def answer(text):
    return [{"role": "assistant", "content": text}]


def started(quiz, url, index):
    env = quiz.QuizEnv(base_url=url)
    env.reset(**quiz.build_dataset(indices=[index])[0])
    return env


def test_the_module_knows_its_terminal_tool_and_the_model_never_sees_it(quiz):
    assert quiz.QuizEnv.spec.terminal_tool == "submit"
    assert quiz.TOOLS == ("lookup",) and not hasattr(quiz.QuizEnv, "submit")
    assert quiz.reward_funcs == [submit_final_message]


def test_the_final_message_is_graded_by_the_terminal_tool(quiz, quiz_url):
    right, wrong = started(quiz, quiz_url, 0), started(quiz, quiz_url, 3)
    assert "Paris" in right.lookup(topic="geography")
    completions = [
        [*answer(None), {"role": "tool", "name": "lookup", "content": "..."}, *answer("It is Paris.")],
        answer("I think 41."),
    ]
    assert submit_final_message(environments=[right, wrong], completions=completions) == [None, None]
    assert (right.rewards, right.last_output, right.outcome) == ([None, 1.0], "correct", "finished")
    assert (wrong.reward, wrong.last_output, wrong.outcome) == (0.0, "incorrect", "finished")
    assert not right._episode.open and not wrong._episode.open  # the terminal tool ended the rollout
    assert [right.get_reward(), wrong.get_reward()] == [1.0, 0.0]


def test_only_unfinished_rollouts_that_answered_are_submitted(quiz, quiz_url):
    cut_off = started(quiz, quiz_url, 0)  # the rollout ended on a tool call: the model never answered
    calling = [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "lookup"}}]}]
    graded = started(quiz, quiz_url, 0)
    submit_final_message(environments=[graded], completions=[answer("paris")])
    submit_final_message(environments=[cut_off, graded], completions=[calling, answer("london")])
    assert (cut_off.outcome, cut_off.get_reward()) == ("running", None)  # unscored, not zero
    assert graded.rewards == [1.0]  # graded once: a finished rollout is not submitted again
    # Every scorer submits first, so an explicit summed_reward on a terminal env scores it too.
    assert summed_reward(environments=[started(quiz, quiz_url, 1)], completions=[answer("8 legs")]) == [1.0]


def test_final_message_shapes():
    assert final_message("plain text") == "plain text"
    assert (
        final_message(answer([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}])) == "ab"
    )
    assert final_message([]) is None
    assert final_message([*answer("x"), {"role": "tool", "name": "lookup", "content": "y"}]) is None


def test_without_environments_the_limit_is_logged_once(caplog, monkeypatch):
    """AsyncGRPOTrainer passes reward functions no environments: nothing can reach the env."""
    monkeypatch.setattr("orlgen.runtime.trl.scoring._warned", [])
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        assert submit_final_message(completions=[answer("paris")] * 2) == [None, None]
        submit_final_message(completions=[answer("paris")])
    assert len([r for r in caplog.records if "terminal tool cannot see the final message" in r.message]) == 1


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_grpo_step_scores_the_final_message(quiz, quiz_url, tiny_model_path, tmp_path):
    """One GRPO step on quiz tasks 0 (Paris) and 3 (42), 2 generations each. The tiny model is
    taught (supervised steps on the exact prompt tokens TRL builds) to answer every question
    with "paris" and stop, without calling a tool, so each rollout ends with a plain message:
    TRL's reward path submits it, task 0's rollouts win and task 3's lose. The logged mean (0.5)
    can only come from the server's terminal tool."""
    rows = quiz.build_dataset(indices=[0, 3])
    trainer, factory = make_trainer(tiny_model_path, quiz, quiz_url, rows, tmp_path, temperature=0.5)
    examples = []
    for row in rows:
        prompt_ids = first_turn_ids(trainer, row, quiz.QuizEnv(base_url=quiz_url).reset(**row))
        examples.append((prompt_ids, answer_ids(trainer.processing_class, "paris")))
    assert teach(trainer.model, examples) < 0.05

    trainer.train()

    assert len(factory.created) == 4
    for env in factory.created:
        assert env.outcome == "finished" and env.tool_calls == 0 and not env._episode.open, env
    assert sorted(env.last_output for env in factory.created) == ["correct", "correct", "incorrect", "incorrect"]
    metrics = trainer.state.log_history[0]
    assert metrics["reward"] == pytest.approx(0.5)
    assert metrics["rewards/QuizEnv/mean"] == pytest.approx(0.5)
    assert metrics["rewards/submit_final_message/mean"] is None  # a step, not a score
