"""The echo environment: the model must call `echo` with the task's target string."""

from openreward.environments import Environment, ListToolsOutput, TextBlock, ToolOutput, ToolSpec, tool
from pydantic import BaseModel

TARGETS = ["hello", "orlgen", "open reward", "grpo", "snapshot", "typed tools", "review me", "done"]


class EchoParams(BaseModel):
    text: str


class Echo(Environment):
    """Echo the target string back to win."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"target": t, "offers_hint": i % 2 == 0} for i, t in enumerate(TARGETS)]

    def get_prompt(self):
        return [TextBlock(text=f"Call the echo tool with the text {self.task_spec['target']!r}.")]

    @tool
    def echo(self, params: EchoParams) -> ToolOutput:
        """Echo a text back to the environment. Wins when it equals the target string.

        The episode ends after the first echo.
        """
        won = params.text == self.task_spec["target"]
        return ToolOutput(
            blocks=[TextBlock(text="correct" if won else f"wrong: {params.text!r}")],
            reward=1.0 if won else 0.0,
            finished=True,
        )

    @tool(shared=False)
    def hint(self) -> ToolOutput:
        """Reveal the first letter of the target."""
        return ToolOutput(blocks=[TextBlock(text=f"It starts with {self.task_spec['target'][0]!r}.")])

    def list_task_tools(self) -> ListToolsOutput:
        if not self.task_spec.get("offers_hint"):
            return ListToolsOutput(tools=[])
        hint = ToolSpec(name="hint", description=(Echo.hint.__doc__ or "").strip(), input_schema=None)
        return ListToolsOutput(tools=[hint])
