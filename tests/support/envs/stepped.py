"""An ORS environment whose step rewards add up to the episode's score, as some published envs
document: four `advance` calls give [None, None, 0.005, 0.0], the last one ends the episode."""

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

STEP_REWARDS = [None, None, 0.005, 0.0]


class AdvanceParams(BaseModel):
    steps: int = 1


class Stepped(Environment):
    """Walk a short track; reaching the third square pays a little."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        self.position = 0

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"track": "short"}]

    def get_prompt(self):
        return [TextBlock(text="Advance four times.")]

    @tool
    def advance(self, params: AdvanceParams) -> ToolOutput:
        """Move forward on the track.

        Args:
            steps: How many squares to move (the track counts one move per call).

        Returns:
            Where you are now.
        """
        reward = STEP_REWARDS[self.position]
        self.position += 1
        return ToolOutput(
            blocks=[TextBlock(text=f"at square {self.position}")],
            reward=reward,
            finished=self.position == len(STEP_REWARDS),
        )
