"""A small ORS environment for tests: its tool reports exactly which arguments reached it."""

from __future__ import annotations

from typing import Literal

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field


class RecordParams(BaseModel):
    query: str = Field(description="Any text.")
    limit: int = Field(10, ge=1, le=50, description="A bounded number with a default.")
    mode: Literal["fast", "slow"] | None = Field(None, description="An optional enum.")
    source: str | None = Field(None, alias="from", description="A keyword-named parameter.")
    file_path: str | None = Field(None, alias="file-path", description="A non-identifier name.")


class Recording(Environment):
    """Task fields include reserved column names (`prompt`, `task_index`) and a mixed type."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [
            {"prompt": f"p{i}", "task_index": 100 + i, "mixed": i if i % 2 else f"s{i}", "nested": {"k": i}}
            for i in range(6)
        ]

    def get_prompt(self):
        return [TextBlock(text=f"record task {self.task_spec['prompt']}")]

    @tool
    def record(self, params: RecordParams) -> ToolOutput:
        """Report the arguments that reached the server, by wire name, with their values."""
        sent = params.model_dump(mode="json", by_alias=True, include=params.model_fields_set)
        return ToolOutput(blocks=[TextBlock(text=repr(sorted(sent.items())))], reward=0.5)

    @tool
    def crash(self) -> ToolOutput:
        """A tool that raises: the server ends the session."""
        raise RuntimeError("tool crashed on purpose")
