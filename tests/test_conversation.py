"""Conversation-shaped environments (ORS `get_messages`): capture records the shape and the
system prompt, `build_dataset` keeps the system message as a role, and `reset` returns the rest
of the conversation with its roles, repeating nothing the row carries and losing nothing
(examples.interview on a real loopback server)."""

from __future__ import annotations

import importlib

import pytest
from orlgen.serve import ServerProcess

SYSTEM = "You are a hiring assistant. Be brief; record every decision with the decide tool."


@pytest.fixture(scope="module")
def interview_url():
    with ServerProcess("examples.interview:Interview") as server:
        yield server.url


@pytest.fixture(scope="module")
def interview():
    return importlib.import_module("generated.interview")


def test_capture_records_a_conversation_shaped_env_and_its_system_prompt():
    from orlgen.capture.live import capture

    snapshot = capture("examples.interview:Interview")
    assert snapshot.conversation is True and snapshot.system_prompt == SYSTEM
    plain = capture("examples.echo:Echo")
    assert plain.conversation is False and '"conversation"' not in plain.to_json()  # omitted at the default

    from orlgen.review.diff import diff

    became = plain.model_copy(update={"conversation": True, "system_prompt": SYSTEM})
    (change,) = diff(plain, became)
    assert (change.rule, change.breaking, change.detail) == (
        "PROMPT_SHAPE_CHANGED",
        False,
        "text → messages with a shared system prompt",
    )


def test_the_dataset_carries_the_system_role_and_reset_the_rest(interview, interview_url):
    row = interview.build_dataset(indices=[1])[0]
    assert row["prompt"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ""}]
    env = interview.InterviewEnv(base_url=interview_url)
    assert env.reset(**row) == (
        "[user]\nI interviewed Brook today.\n"
        "[assistant]\nHow many years of experience do they have?\n"
        "[user]\n1 years. We hire from 3 years. Decide."
    )
    assert env.decide(hire=False) == "recorded" and env.reward == 1.0

    # A row without the system turn (TRL's placeholder rows under train_dataset=None) still gets it.
    prompt = env.reset(task_index=0)
    assert prompt.startswith(f"[system]\n{SYSTEM}\n[user]\nI interviewed Ada today.")
