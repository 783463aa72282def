"""A scripted policy for `orlgen eval` tests: it plays the example environments the way a model
that knows them would, with per-rollout slips chosen by the request's seed, so rewards vary
across a GRPO group. Served by `bench.chat_server`."""

from __future__ import annotations

import random
import re
from typing import Any

from bench.chat_server import answer, call, turn_of


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    """Plays whichever example env the request's tools belong to."""
    tools = {tool["function"]["name"] for tool in body.get("tools") or ()}
    messages = body["messages"]
    turn = turn_of(body)
    rollout = random.Random(int(body.get("seed", 0)) - turn)  # one draw per rollout, whatever the turn
    prompt = next(message["content"] for message in messages if message["role"] == "user")
    if "submit_resolution" in tools:
        return _helpdesk(prompt, turn, rollout)
    if "lookup" in tools:
        return _quiz(prompt, turn, rollout)
    if "run" in tools:
        return call("run", {"command": f"step {turn}"}, turn) if turn < 3 else answer("done")
    if "step" in tools:
        return call("step", {}, turn) if turn == 0 else answer("done")
    if "echo" in tools:
        target = re.search(r"with the text '(.*)'\.", prompt)
        return call("echo", {"text": target.group(1) if target else ""}, turn) if turn == 0 else answer("done")
    return answer("I cannot help with that.")


_TICKETS: dict[str, dict[str, Any]] = {}


def _helpdesk(prompt: str, turn: int, rollout: random.Random) -> dict[str, Any]:
    """The perfect solution, except that a third of rollouts skip the action step and one in
    ten opens with a malformed call (a tool error)."""
    from examples.helpdesk import _tasks, scripted_solution

    if not _TICKETS:
        _TICKETS.update({task["ticket_id"]: task for split in ("train", "test") for task in _tasks(split)})
    ticket = re.search(r"Support ticket (\S+)", prompt)
    spec = _TICKETS[ticket.group(1)]
    steps = scripted_solution(spec)
    draw = rollout.random()
    if draw < 0.35 and len(steps) > 2:
        steps = [step for step in steps if step[0] not in ("issue_refund", "update_shipping", "cancel_order")]
    if draw > 0.9:
        steps = [("get_order", "{not json"), *steps]
    if turn >= len(steps):
        return answer("The ticket is resolved.")
    name, arguments = steps[turn]
    return call(name, arguments, turn)


def _quiz(prompt: str, turn: int, rollout: random.Random) -> dict[str, Any]:
    """Looks the topic up, then answers right in about two rollouts of three."""
    from examples.quiz import QUESTIONS

    question = next(q for q in QUESTIONS if q["question"] in prompt)
    if turn == 0:
        return call("lookup", {"topic": question["topic"]}, turn)
    return answer(f"The answer is {question['answer']}." if rollout.random() < 0.67 else "I am not sure.")
