"""An ORS environment shaped like the published envs that need an `*api_key*` secret (8 of 21 on
the field trial, FIELD-NOTES): its session cannot open without `JUDGE_API_KEY` among the
session's secrets (checked in `__init__`, as those envs build their judge's client there), and
it is played by the scripted endpoint's winning script (`tests/support/stub_openai.py`: `look`,
then `submit` of the target of the task its prompt names), which it rewards 1.0.

Like careless servers, `look` quotes the key it was given: a client must mask it before the model
(or a log, or a results file) sees it. Served by the openreward SDK's server in the tests.
"""

from __future__ import annotations

from openreward.environments import Environment, Split, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

from tests.support.envs.both import TASKS

SECRET = "JUDGE_API_KEY"


class SubmitParams(BaseModel):
    answer: int = Field(description="The final answer.")


class Keyed(Environment):
    """Find the task's target number with the judge's help, then submit it."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:
        super().__init__(task_spec=task_spec, secrets=secrets)
        key = secrets.get(SECRET)
        if not key:
            raise KeyError(f"{SECRET} is required to reach the judge")
        self.key = key

    @classmethod
    def list_splits(cls):
        return [Split(name="train", type="train")]

    @classmethod
    def list_tasks(cls, split: str):
        return TASKS[split]

    def get_prompt(self):
        return [TextBlock(text=f"Task {self.task_spec['id']}: find the target number, then submit it.")]

    @tool
    def look(self) -> ToolOutput:
        """Ask the judge whether it is ready."""
        return ToolOutput(blocks=[TextBlock(text=f"the judge is ready (key {self.key})")])

    @tool
    def submit(self, params: SubmitParams) -> ToolOutput:
        """Submit the final answer; this ends the episode.

        Args:
            answer: The final answer.
        """
        right = params.answer == self.task_spec["target"]
        return ToolOutput(
            blocks=[TextBlock(text="correct" if right else "wrong")], reward=1.0 if right else 0.0, finished=True
        )
