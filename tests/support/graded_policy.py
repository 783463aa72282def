"""The scripted model for the graded env (`tests/support/envs/graded.py`): a script, not a model.

A rollout's plan is its task and how many times it calls `advance` before it answers in plain
text (which ends it unfinished, unless the env finished it first). Several rollouts of one task
may be asked for at once and in any order (`orlgen eval -k`, `vf-eval -r`), and a request does
not say which rollout it belongs to; but the rollouts of a task are alike until one stops, so
the script decides per task and turn: of the rollouts of task t that ask for turn n (n calls
made), as many answer as there are plans of t that stop at n, the first to ask; the rest call
again. Each plan is played whichever rollout plays it. The task is the one the prompt names
("Task 2: ...").

Two front ends share it: `message(body)`, an OpenAI assistant message for `bench.chat_server`'s
in-process `ChatServer` (the agent loop, `orlgen eval`), and `steps(body)`, the step list
`tests/support/stub_openai.py` plays (`STUB_SCRIPT=graded:0:4,0:2`, for vf-eval).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

from bench.chat_server import answer, call, turn_of

ANSWER = "The track is long enough for me."


class Plans:
    """The script for `plans`, (task index, calls) pairs; one instance per run of them."""

    def __init__(self, plans: list[tuple[int, int]]) -> None:
        self._stops = Counter(plans)
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, text: str) -> Plans:
        """`0:4,0:2`: task 0 twice, calling 4 times, then 2."""
        pairs = (item.split(":") for item in text.split(","))
        return cls([(int(task), int(calls)) for task, calls in pairs])

    def calls_again(self, body: dict[str, Any]) -> bool:
        """Whether this turn calls `advance` (else it answers in text)."""
        key = (task_of(body), turn_of(body))
        with self._lock:
            if self._stops[key] > 0:
                self._stops[key] -= 1
                return False
        return True

    def message(self, body: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(body)
        return call("advance", {}, turn) if self.calls_again(body) else answer(ANSWER)

    def steps(self, body: dict[str, Any]) -> list[Any]:
        step: Any = ("advance", {}) if self.calls_again(body) else ANSWER
        return [("advance", {})] * turn_of(body) + [step]


def task_of(body: dict[str, Any]) -> int:
    """The task the first user message names; a request naming none is a script error."""
    for message in body["messages"]:
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, str):
            found = re.search(r"Task (\d+):", content)
            if found:
                return int(found.group(1))
    raise ValueError("no user message names its task ('Task N: ...')")
