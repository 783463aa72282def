"""An ORS environment whose task-only tools follow the task index, as published envs' often do:
`peek` on odd tasks, `bonus` on every third task (index 2, 5, 8, 11). Probing tasks 0, 4 and 8
of its 12 tasks never meets `peek`. `calls` reports how many tool calls reached this session."""

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool


class Parity(Environment):
    """Twelve tasks; some tools are offered on some of them only."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        self.received = 0

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": i} for i in range(12)]

    def get_prompt(self):
        return [TextBlock(text=f"Task {self.task_spec['n']}.")]

    def _reply(self, text: str) -> ToolOutput:
        self.received += 1
        return ToolOutput(blocks=[TextBlock(text=text)])

    @tool
    def calls(self) -> ToolOutput:
        """How many tool calls reached this session, this one included."""
        return self._reply(str(self.received + 1))

    @tool(shared=False)
    def peek(self) -> ToolOutput:
        """Peek at the answer (odd tasks only)."""
        return self._reply(f"peeked at task {self.task_spec['n']}")

    @tool(shared=False)
    def bonus(self) -> ToolOutput:
        """Claim a bonus (every third task)."""
        return self._reply("bonus")

    def list_task_tools(self) -> ListToolsOutput:
        n = self.task_spec["n"]
        offered = [("peek", n % 2 == 1), ("bonus", n % 3 == 2)]
        return ListToolsOutput(
            tools=[
                ToolSpec(name=name, description=(getattr(Parity, name).__doc__ or "").strip(), input_schema=None)
                for name, on in offered
                if on
            ]
        )
