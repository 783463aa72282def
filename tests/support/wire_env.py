"""An ORS environment for the runtime's wire tests (tests/test_ors_client.py).

Fault injection by design: `tick` counts its runs in the file named by `ORLGEN_TICK_FILE` (so a
test can tell that a tool ran once although its answer was streamed twice), `big` answers with
as many characters as asked (many SSE chunks), `nap` takes as long as told (the server pings
meanwhile), and sessions opened and deleted are counted in `ORLGEN_COUNT_FILE`.
"""

from __future__ import annotations

import os
import threading
import time

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

from tests.support.envs.counting import _count

_lock = threading.Lock()


class BigParams(BaseModel):
    chars: int = Field(ge=0, le=1_000_000, description="How many characters to answer with.")


class NapParams(BaseModel):
    seconds: float = Field(ge=0, le=120, description="How long the tool takes.")


class Ticker(Environment):
    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        self.secrets = secrets or {}
        _count("opened")

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": i} for i in range(4)]

    def teardown(self):
        _count("closed")

    def get_prompt(self):
        return [TextBlock(text=f"ticker task {self.task_spec['n']}")]

    @tool
    def tick(self) -> ToolOutput:
        """Count one run (after half a second), and end the episode with reward 1."""
        time.sleep(0.5)
        path = os.environ["ORLGEN_TICK_FILE"]
        with _lock:
            runs = int(open(path).read() or 0) + 1 if os.path.exists(path) else 1
            open(path, "w").write(str(runs))
        return ToolOutput(blocks=[TextBlock(text=f"tick {runs}")], reward=1.0, finished=True)

    @tool
    def big(self, params: BigParams) -> ToolOutput:
        """Answer with `chars` characters: a digit pattern, so a lost or doubled chunk shows."""
        text = "".join(str(i % 10) for i in range(params.chars))
        return ToolOutput(blocks=[TextBlock(text=text)])

    @tool(concurrent=True)
    def nap(self, params: NapParams) -> ToolOutput:
        """Take `seconds` to answer."""
        time.sleep(params.seconds)
        return ToolOutput(blocks=[TextBlock(text="rested")])

    @tool
    def leak(self) -> ToolOutput:
        """Quote the session's secret values back (a careless env)."""
        return ToolOutput(blocks=[TextBlock(text="values: " + ", ".join(sorted(self.secrets.values())))])
