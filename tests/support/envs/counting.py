"""An ORS environment for fault and lifecycle tests.

Fault injection by design: it counts sessions opened and torn down in a file named by
`ORLGEN_COUNT_FILE` (so a test can read the server's view from outside its process), sleeps in
`setup()` for `task_spec["setup_seconds"]`, and has a tool that takes as long as it is told.
"""

from __future__ import annotations

import json
import os
import threading
import time

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

_lock = threading.Lock()


def _count(key: str) -> None:
    path = os.environ.get("ORLGEN_COUNT_FILE")
    if not path:
        return
    with _lock:
        counts = json.loads(open(path).read()) if os.path.exists(path) else {"opened": 0, "closed": 0}
        counts[key] += 1
        with open(path + ".tmp", "w") as handle:
            json.dump(counts, handle)
        os.replace(path + ".tmp", path)


class WaitParams(BaseModel):
    seconds: float = Field(ge=0, le=120, description="How long the tool takes.")


class Counting(Environment):
    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        self.secrets = secrets or {}
        _count("opened")

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": i, "setup_seconds": 4.0 if i == 9 else 0.0} for i in range(10)]

    def setup(self):
        time.sleep(self.task_spec.get("setup_seconds", 0.0))

    def teardown(self):
        _count("closed")

    def get_prompt(self):
        return [TextBlock(text=f"counting task {self.task_spec['n']}")]

    @tool(concurrent=True)
    def wait(self, params: WaitParams) -> ToolOutput:
        """Take `seconds` to answer."""
        time.sleep(params.seconds)
        return ToolOutput(blocks=[TextBlock(text="waited")])

    @tool
    def secret_names(self) -> ToolOutput:
        """Which secrets reached the session (names only)."""
        return ToolOutput(blocks=[TextBlock(text=json.dumps(sorted(self.secrets)))])

    @tool
    def finish(self) -> ToolOutput:
        """End the episode with reward 1."""
        return ToolOutput(blocks=[TextBlock(text="finished")], reward=1.0, finished=True)


class DriftedCounting(Counting):
    """The counting env after an upstream change: served under the same key, one tool reworded
    and one added. Fault injection for the drift guard."""

    @classmethod
    def name(cls) -> str:
        return "Counting"

    @tool
    def finish(self) -> ToolOutput:
        """End the episode (reworded upstream)."""
        return ToolOutput(blocks=[TextBlock(text="finished")], reward=1.0, finished=True)

    @tool
    def extra(self) -> ToolOutput:
        """A tool the snapshot does not know."""
        return ToolOutput(blocks=[TextBlock(text="extra")])
