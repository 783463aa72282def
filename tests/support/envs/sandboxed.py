"""An ORS environment shaped like published sandbox envs (SkillsBench, SWE-rebench-V2, DSBC):
`setup()` starts the task's sandbox through a remote service, which cannot be reached here, so it
fails after a short retry, as those envs fail offline. `__init__` needs nothing, so the server
answers `/task_tools` (served before setup) while `/prompt`, `/messages` and `/call` fail.

Its tools: a shared `run` (a shell command in the sandbox) and a task-only `submit_patch`,
offered on every task through `list_task_tools`, as sandbox envs list their per-task tools.
"""

from __future__ import annotations

import socket
import time

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel, Field

SANDBOX = ("127.0.0.1", 9)  # the discard port: nothing listens there, a connection is refused


class RunParams(BaseModel):
    command: str = Field(description="A shell command to run in the task's sandbox.")


class PatchParams(BaseModel):
    diff: str = Field(description="A unified diff to apply to the repository.")


class Sandboxed(Environment):
    """Fix the failing test in the task's repository, working in a remote sandbox."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"repo": f"example/project-{i}", "test": f"tests/test_{i}.py"} for i in range(6)]

    def setup(self) -> None:
        deadline = time.monotonic() + 0.3
        while True:  # a sandbox client's connect-and-retry, cut short
            try:
                socket.create_connection(SANDBOX, timeout=0.2).close()
                return
            except OSError as exc:
                if time.monotonic() > deadline:
                    raise ConnectionError(f"cannot reach the sandbox service at {SANDBOX[0]}:{SANDBOX[1]}") from exc
                time.sleep(0.05)

    def get_prompt(self):
        return [TextBlock(text=f"Make {self.task_spec['test']} pass in {self.task_spec['repo']}.")]

    @tool
    def run(self, params: RunParams) -> ToolOutput:
        """Run a shell command in the sandbox and return its output."""
        return ToolOutput(blocks=[TextBlock(text=f"$ {params.command}")])

    @tool(shared=False)
    def submit_patch(self, params: PatchParams) -> ToolOutput:
        """Apply the patch and run the task's test; the episode ends."""
        return ToolOutput(blocks=[TextBlock(text="applied")], reward=0.0, finished=True)

    def list_task_tools(self) -> ListToolsOutput:
        spec = ToolSpec(
            name="submit_patch",
            description=(Sandboxed.submit_patch.__doc__ or "").strip(),
            input_schema=PatchParams.model_json_schema(),
        )
        return ListToolsOutput(tools=[spec])
