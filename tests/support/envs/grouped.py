"""An ORS environment that scores a GRPO group's completions together (`score_group`, SDK
0.1.157), with a split whose declared type is not the one its name implies (`hard`, a test split).

`score_group` ranks the candidates by the length of their last message's text: the longest gets
1.0, the shortest 0.0 (ties share), and it records the group size it was asked to score in the
file `ORLGEN_GROUP_LOG` names, so a test sees one request per group from outside the server.
"""

from __future__ import annotations

import os

from openreward.environments import Environment, Split, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field


class GuessParams(BaseModel):
    word: str = Field(description="Your guess.")


class Grouped(Environment):
    """Guess a word; a group's answers are also ranked against each other."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})

    @classmethod
    def list_splits(cls):
        return [Split(name="train", type="train"), Split(name="hard", type="test")]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"word": f"{split}-word-{i}"} for i in range(4)]

    def get_prompt(self):
        return [TextBlock(text="Guess the word.")]

    @tool
    def guess(self, params: GuessParams) -> ToolOutput:
        """Guess the word; the episode ends."""
        won = params.word == self.task_spec["word"]
        return ToolOutput(blocks=[TextBlock(text="yes" if won else "no")], reward=float(won), finished=True)

    async def score_group(self, candidates):
        lengths = [sum(len(getattr(b, "text", "") or "") for b in c.messages[-1].blocks) for c in candidates]
        low, high = min(lengths), max(lengths)
        if os.environ.get("ORLGEN_GROUP_LOG"):
            with open(os.environ["ORLGEN_GROUP_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{len(candidates)}\n")
        return [0.0 if high == low else (n - low) / (high - low) for n in lengths]
