"""ORS environments for tests/test_trust4_text.py, served for real by the openreward SDK.

`LongToolName`: a tool whose wire name is 100,000 characters long (a hostile or broken server),
beside an ordinary one. `TaskColumns`: tasks whose fields are named like the columns SkyRL adds
to a dataset row (`env_class`, `max_turns`) and like orlgen's own (`prompt`), with one tool that
ends the episode with reward 1.
"""

from __future__ import annotations

from openreward.environments import Environment, TextBlock, ToolOutput, tool

LONG_NAME = "t" * 100_000


class LongToolName(Environment):
    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"id": 0}]

    def get_prompt(self):
        return [TextBlock(text="Call a tool.")]

    @tool
    def ping(self) -> ToolOutput:
        """An ordinary tool."""
        return ToolOutput(blocks=[TextBlock(text="pong")])


def _long(self: LongToolName) -> ToolOutput:
    """A tool under a 100,000-character name."""
    return ToolOutput(blocks=[TextBlock(text="long")])


setattr(LongToolName, LONG_NAME, tool(_long))


class TaskColumns(Environment):
    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"env_class": "the task's own", "max_turns": 1, "prompt": "its own prompt"}]

    def get_prompt(self):
        return [TextBlock(text=f"Task says: {self.task_spec['prompt']}")]

    @tool
    def submit(self) -> ToolOutput:
        """End the episode with reward 1."""
        return ToolOutput(blocks=[TextBlock(text="done")], reward=1.0, finished=True)
