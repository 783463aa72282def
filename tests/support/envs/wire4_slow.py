"""ORS environments slow or quick to fail at being built, written the way published ones are
(pydantic params with descriptions, Google `Args:` docstrings, a submit tool that scores and
finishes, a task-only tool on even tasks).

- `SlowBuild`: its constructor takes `ORLGEN_TEST_BUILD_SECONDS` (default 0) seconds, as a
  published env that builds a puzzle there does (Zebra: 89-115 s); the SDK's server sends nothing
  while it runs.
- `SetupFails`: its `setup()` raises at once, as an env whose sandbox cannot be reached does.
"""

from __future__ import annotations

import os
import time

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel, Field


class SubmitParams(BaseModel):
    answer: str = Field(description="The solution, as the prompt asks for it.")


class _Puzzle(Environment):
    """Solve a small puzzle, then submit the solution."""

    def __init__(self, task_spec: dict | None = None, secrets: dict | None = None) -> None:
        super().__init__(task_spec or {}, secrets or {})

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"id": i, "solution": f"s{i}"} for i in range(4)]

    def get_prompt(self):
        return [TextBlock(text=f"Puzzle {self.task_spec['id']}: submit its solution.")]

    @tool
    def submit(self, params: SubmitParams) -> ToolOutput:
        """Submit the solution; this ends the episode.

        Args:
            answer: The solution, as the prompt asks for it.
        """
        right = params.answer == self.task_spec["solution"]
        return ToolOutput(blocks=[TextBlock(text="correct" if right else "wrong")], reward=float(right), finished=True)

    @tool(shared=False)
    def peek(self) -> ToolOutput:
        """The solution's first character (even puzzles only)."""
        return ToolOutput(blocks=[TextBlock(text=self.task_spec["solution"][0])])

    def list_task_tools(self) -> ListToolsOutput:
        if self.task_spec["id"] % 2:
            return ListToolsOutput(tools=[])
        return ListToolsOutput(
            tools=[ToolSpec(name="peek", description="The solution's first character.", input_schema=None)]
        )


class SlowBuild(_Puzzle):
    def __init__(self, task_spec: dict | None = None, secrets: dict | None = None) -> None:
        super().__init__(task_spec, secrets)
        time.sleep(float(os.environ.get("ORLGEN_TEST_BUILD_SECONDS") or 0))


class SetupFails(_Puzzle):
    async def setup(self) -> None:  # on the server's loop: failed before any later request is read
        raise ConnectionError("cannot reach the sandbox service at 127.0.0.1:9")
