"""An ORS environment whose tasks carry their own step rewards, as published envs keep a task's
data in its spec: each `advance` pays the task's next step reward (None: no reward that step),
and the last step ends the episode. tests/test_reward_shaping.py plays it under every reward rule
through every trainer's module; its expected rewards are computed by hand from `TASKS`."""

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

TASKS = [
    {"id": 0, "rewards": [0.5, None, 2.0, -1.0]},  # every reduction gives another number
    {"id": 1, "rewards": [None, 0.25]},  # one reward, at the last step
    {"id": 2, "rewards": [None, None]},  # finishes with no reward at all: unscored
]


class AdvanceParams(BaseModel):
    steps: int = 1


class Graded(Environment):
    """Walk a graded track; each square pays what the task says."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        self.rewards = list(self.task_spec.get("rewards", []))
        self.position = 0

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return TASKS

    def get_prompt(self):
        return [TextBlock(text=f"Task {self.task_spec['id']}: advance until the track ends.")]

    @tool
    def advance(self, params: AdvanceParams) -> ToolOutput:
        """Move forward on the track.

        Args:
            steps: How many squares to move (the track counts one move per call).

        Returns:
            Where you are now.
        """
        reward = self.rewards[self.position]
        self.position += 1
        return ToolOutput(
            blocks=[TextBlock(text=f"at square {self.position} of {len(self.rewards)}")],
            reward=reward,
            finished=self.position == len(self.rewards),
        )
