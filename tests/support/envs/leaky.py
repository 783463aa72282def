"""An ORS environment that writes its key to its output, as careless servers do in a traceback
(fault injection for the local server's log): on import it prints `LEAKY_API_KEY`'s value."""

import os
import sys

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

print(f"connecting to the judge with key {os.environ.get('LEAKY_API_KEY')}", file=sys.stderr, flush=True)


class NoParams(BaseModel):
    pass


class Leaky(Environment):
    """Do nothing."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": 0}]

    def get_prompt(self):
        return [TextBlock(text="Do nothing.")]

    @tool
    def noop(self, params: NoParams) -> ToolOutput:
        """Do nothing."""
        return ToolOutput(blocks=[TextBlock(text="done")], reward=1.0, finished=True)
