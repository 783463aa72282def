"""An ORS environment that fails on some tasks, by design (fault injection for `orlgen eval`):
task 1's `setup` raises (the session cannot open), task 2's `step` tool raises (the session
dies mid-rollout); every other task pays 1.0 on its one `step`. The faults are on only where `ORLGEN_FLAKY` is set
(the test's server), so a capture's probe sessions see a healthy environment."""

import os

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel


class StepParams(BaseModel):
    pass


class Flaky(Environment):
    """Take one step."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": i} for i in range(4)]

    async def setup(self):
        if self.task_spec["n"] == 1 and os.environ.get("ORLGEN_FLAKY"):
            raise RuntimeError("the sandbox did not start")

    def get_prompt(self):
        return [TextBlock(text=f"Task {self.task_spec['n']}: take one step.")]

    @tool
    def step(self, params: StepParams) -> ToolOutput:
        """Take the step."""
        if self.task_spec["n"] == 2 and os.environ.get("ORLGEN_FLAKY"):
            raise RuntimeError("the step crashed")
        return ToolOutput(blocks=[TextBlock(text="stepped")], reward=1.0, finished=True)
