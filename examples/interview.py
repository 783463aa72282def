"""A conversation-shaped environment: the prompt is a role-tagged conversation (ORS `get_messages`,
SDK >= 0.1.157) with a system prompt, an earlier exchange and the user's last turn, instead of one
`get_prompt` text. The server still serves a flattened `/prompt` for older clients.
"""

from openreward.environments import Environment, Message, TextBlock, ToolOutput, tool
from pydantic import BaseModel

SYSTEM = "You are a hiring assistant. Be brief; record every decision with the decide tool."
CANDIDATES = [
    {"name": "Ada", "years": 7, "hire": True},
    {"name": "Brook", "years": 1, "hire": False},
    {"name": "Cai", "years": 4, "hire": True},
]


class DecideParams(BaseModel):
    hire: bool


class Interview(Environment):
    """Decide whether to hire the candidate the conversation is about."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return list(CANDIDATES)

    def get_messages(self):
        name, years = self.task_spec["name"], self.task_spec["years"]
        return [
            Message(role="system", blocks=[TextBlock(text=SYSTEM)]),
            Message(role="user", blocks=[TextBlock(text=f"I interviewed {name} today.")]),
            Message(role="assistant", blocks=[TextBlock(text="How many years of experience do they have?")]),
            Message(role="user", blocks=[TextBlock(text=f"{years} years. We hire from 3 years. Decide.")]),
        ]

    @tool
    def decide(self, params: DecideParams) -> ToolOutput:
        """Record the hiring decision. Ends the episode."""
        won = params.hire == self.task_spec["hire"]
        return ToolOutput(blocks=[TextBlock(text="recorded")], reward=1.0 if won else 0.0, finished=True)
