"""`Bulk`, a synthetic environment with 20,000 tasks whose `list_tasks` is cheap (built once,
cached): the scale scenarios' env, served by `bench.served`."""

from __future__ import annotations

import functools
from typing import Any

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

BULK_TASKS = 20_000
_TOPICS = ["billing", "shipping", "returns", "accounts", "warranty", "hardware", "software", "security"]


@functools.cache
def _bulk_tasks(split: str) -> tuple[dict[str, Any], ...]:
    """Cheap, deterministic, about 300 bytes of JSON per task (nested object, list, nullable)."""
    tasks = []
    for i in range(BULK_TASKS):
        topic = _TOPICS[i % len(_TOPICS)]
        tasks.append(
            {
                "id": f"{split}-{i:05d}",
                "question": f"Ticket {i}: the customer asks about {topic}; find the answer code in the knowledge base.",
                "answer": f"ANS-{(i * 7919) % 100000:05d}",
                "difficulty": ("easy", "medium", "hard")[i % 3],
                "topic": topic,
                "tags": [topic, f"batch-{i // 1000}"],
                "limits": {"max_turns": 4 + i % 5, "budget": round(0.5 + (i % 10) / 10, 2)},
                "note": None if i % 4 else f"VIP customer #{i}",
            }
        )
    return tuple(tasks)


class AnswerParams(BaseModel):
    code: str = Field(min_length=1, description="The answer code, e.g. 'ANS-00042'.")


class LookupParams(BaseModel):
    topic: str = Field(description="A knowledge-base topic.")
    limit: int = Field(5, ge=1, le=20, description="Maximum number of articles.")


class Bulk(Environment):
    """A large synthetic environment: 20,000 tasks in one split."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return list(_bulk_tasks(split))

    def get_prompt(self):
        return [TextBlock(text=self.task_spec["question"])]

    @tool
    def lookup(self, params: LookupParams) -> ToolOutput:
        """Search the knowledge base by topic."""
        return ToolOutput(blocks=[TextBlock(text=f"{params.limit} articles about {params.topic}")])

    @tool
    def answer(self, params: AnswerParams) -> ToolOutput:
        """Submit the answer code; ends the episode."""
        won = params.code == self.task_spec["answer"]
        return ToolOutput(blocks=[TextBlock(text="correct" if won else "wrong")], reward=float(won), finished=True)
