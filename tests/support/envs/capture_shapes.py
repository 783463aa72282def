"""Small ORS environments for orlgen's capture tests, served by real `openreward` servers.

Each class reproduces one shape of server that `orlgen.capture.live` must handle. Some of them inject
faults on purpose (said so in their docstrings): a refused endpoint or inconsistent tool schemas
come from the environment class itself, so the real SDK server turns them into real HTTP errors.
No SDK code is mocked or patched.

Serve one with `orlgen.serve.ServerProcess("tests.support.envs.capture_shapes:ClassName")`.
"""

from __future__ import annotations

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel


class GuessParams(BaseModel):
    word: str


class _OneToolEnv(Environment):
    """Shared behaviour: a prompt from the task and one `guess` tool."""

    def get_prompt(self):
        return [TextBlock(text=f"Guess the word of task {self.task_spec}.")]

    @tool
    def guess(self, params: GuessParams) -> ToolOutput:
        """Guess the task's word."""
        won = params.word == self.task_spec.get("word")
        return ToolOutput(blocks=[TextBlock(text="yes" if won else "no")], reward=float(won), finished=True)


# --------------------------------------------------------------------------------------------
# A server that refuses /task_range
# --------------------------------------------------------------------------------------------

RANGE_REFUSED_SIZES = {"train": 9, "test": 4}


def range_refused_task(split: str, index: int) -> dict:
    return {"split": split, "index": index, "word": f"{split}-word-{index}"}


class RangeRefused(_OneToolEnv):
    """FAULT INJECTION: `get_task_range` raises HTTPException(404), so the real SDK server answers
    every `/task_range` request with HTTP 404, as an older server without the endpoint does.
    `/tasks`, `/num_tasks` and `/task` work normally."""

    @classmethod
    def list_splits(cls):
        return list(RANGE_REFUSED_SIZES)

    @classmethod
    def list_tasks(cls, split: str):
        return [range_refused_task(split, i) for i in range(RANGE_REFUSED_SIZES[split])]

    @classmethod
    async def get_task_range(cls, split, start=None, stop=None):
        from fastapi import HTTPException

        raise HTTPException(status_code=404, detail="Not Found")


# --------------------------------------------------------------------------------------------
# A large, index-only environment
# --------------------------------------------------------------------------------------------

LARGE_SIZES = {"train": 2500, "test": 40}


def large_task(split: str, index: int) -> dict:
    return {"split": split, "index": index, "word": f"w{(index * 7919) % 1009}", "level": index % 5}


class LargeIndexed(_OneToolEnv):
    """Large-env style: `list_tasks` is not supported (NotImplementedError, so the server answers
    `/tasks` with 400); tasks are reached only through the `num_tasks` / `get_task` classmethods.
    `train` is larger than capture's whole-split limit, so a default capture samples it."""

    @classmethod
    def list_splits(cls):
        return list(LARGE_SIZES)

    @classmethod
    def list_tasks(cls, split: str):
        raise NotImplementedError("too many tasks to list; use num_tasks and get_task")

    @classmethod
    async def num_tasks(cls, split: str) -> int:
        return LARGE_SIZES[split]

    @classmethod
    async def get_task(cls, split: str, index: int) -> dict:
        if not 0 <= index < LARGE_SIZES[split]:
            raise IndexError(index)
        return large_task(split, index)


# --------------------------------------------------------------------------------------------
# A task-only tool whose schema differs between tasks
# --------------------------------------------------------------------------------------------

CONFLICTING_SIZE = 6  # three probes land on tasks 0, 2 and 4


class ConflictingTaskTool(_OneToolEnv):
    """FAULT INJECTION: the task-only tool `lookup` is offered on every task, but task 0 declares
    its `key` parameter a string and every other task an integer: one tool name, two schemas."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"index": i, "word": f"w{i}"} for i in range(CONFLICTING_SIZE)]

    def list_task_tools(self) -> ListToolsOutput:
        key_type = "string" if self.task_spec["index"] == 0 else "integer"
        schema = {"type": "object", "properties": {"key": {"type": key_type}}, "required": ["key"]}
        return ListToolsOutput(tools=[ToolSpec(name="lookup", description="Look a key up.", input_schema=schema)])
