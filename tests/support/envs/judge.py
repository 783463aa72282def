"""An ORS environment shaped like published LLM-judge envs: it needs a key from the session's
secrets, and offers a task-only tool. Served by the real `openreward` server in the tests.

`Judged` reads `JUDGE_API_KEY` from the session's secrets when a session is created and fails
it without the key, as published envs do with an API key for their judge (in `__init__`, so the
session cannot open: an env whose `setup()` fails is `sandboxed.py`'s, which a capture survives). Its `whoami` tool reports which
secrets and credentials reached the server, so tests can check what a client forwarded.
"""

from __future__ import annotations

import json

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel

QUESTIONS = [f"What is {i} + {i}?" for i in range(12)]


class AnswerParams(BaseModel):
    answer: str
    confidence: float = 1.0


class Judged(Environment):
    """Answer arithmetic questions; a judge (needing JUDGE_API_KEY) grades the answer."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:
        super().__init__(task_spec=task_spec, secrets=secrets)
        self.secrets = dict(secrets)
        self._check_key()

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"question": q, "expected": str(2 * i)} for i, q in enumerate(QUESTIONS)]

    def _check_key(self) -> None:
        key = self.secrets.get("JUDGE_API_KEY")
        if not key:
            raise KeyError("JUDGE_API_KEY is required to reach the judge")
        if key.startswith("revoked-"):  # as careless servers do, the error quotes the key
            raise PermissionError(f"the judge refused the key {key}")

    def get_prompt(self):
        return [TextBlock(text=self.task_spec["question"])]

    @tool
    def answer(self, params: AnswerParams) -> ToolOutput:
        """Submit the final answer for grading.

        Args:
            answer: The answer, as a number written in digits.
            confidence: How sure you are, from 0 to 1.

        Returns:
            The judge's verdict; the episode ends.
        """
        won = params.answer.strip() == self.task_spec["expected"]
        return ToolOutput(blocks=[TextBlock(text="correct" if won else "wrong")], reward=float(won), finished=True)

    @tool(shared=False)
    def whoami(self) -> ToolOutput:
        """Report which secrets reached this session, by name and value.

        Returns:
            JSON object of the session's secrets.
        """
        return ToolOutput(blocks=[TextBlock(text=json.dumps(self.secrets, sort_keys=True))])

    def list_task_tools(self) -> ListToolsOutput:
        spec = ToolSpec(name="whoami", description=(Judged.whoami.__doc__ or "").strip(), input_schema=None)
        return ListToolsOutput(tools=[spec])
