"""A slow ORS environment, shaped like a sandbox: opening a session waits for `setup()` (a
container starting) and every tool call waits for a command to run. Both are I/O waits
(`asyncio.sleep`), as in real sandboxes, so the server overlaps them across sessions.

`ORLGEN_SLOW_SETUP_S` (default 1.0) and `ORLGEN_SLOW_TOOL_S` (default 0.2) set the delays; the
server reads them at import.
"""

import asyncio
import os

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

SETUP_S = float(os.environ.get("ORLGEN_SLOW_SETUP_S", "1.0"))
TOOL_S = float(os.environ.get("ORLGEN_SLOW_TOOL_S", "0.2"))


class RunParams(BaseModel):
    command: str


class Slow(Environment):
    """Run three commands in a sandbox that takes a while to start."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        self.commands = 0

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"box": f"box-{i}"} for i in range(64)]

    async def setup(self):
        await asyncio.sleep(SETUP_S)

    def get_prompt(self):
        return [TextBlock(text=f"You are in {self.task_spec['box']}. Run three commands.")]

    @tool
    async def run(self, params: RunParams) -> ToolOutput:
        """Run a shell command in the sandbox.

        Args:
            command: The command line to run.

        Returns:
            The command's output.
        """
        await asyncio.sleep(TOOL_S)
        self.commands += 1
        done = self.commands == 3
        return ToolOutput(
            blocks=[TextBlock(text=f"ran {params.command!r}")], reward=1.0 if done else None, finished=done
        )
