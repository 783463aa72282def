"""An ORS environment whose answers a test can make malformed (see `tests/support/servers/wire.py`).

Every answer is well formed here: the SDK's own pydantic models refuse to build most malformed
values (a list as a reward, a string `finished`, an int as a text block's text). Each answer
names the case it stands for in its metadata (`{"case": ...}`), and the wire server's ASGI
middleware rewrites the answer on its way out. The one value the SDK does let an env send
as is, a reward beyond float32's range, is sent from here (case `huge`). Sessions opened and
torn down are counted in the file named by `ORLGEN_COUNT_FILE`, the server's view of ours.
"""

from __future__ import annotations

import json
import os
import threading

from openreward.environments import Environment, TextBlock, ToolOutput, terminal, tool
from pydantic import BaseModel

MALFORMED_PROMPT = "PROMPT-TO-BE-MALFORMED"
LONG_OUTPUT = 300_000  # characters of text in case `long`
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


class StepParams(BaseModel):
    case: str


class SubmitParams(BaseModel):
    answer: str


class Wire(Environment):
    """Answer in the shape a test asks for."""

    def __init__(self, task_spec=None, secrets=None):
        super().__init__(task_spec or {}, secrets or {})
        _count("opened")

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": n} for n in range(4)]

    def teardown(self):
        _count("closed")

    def get_prompt(self):
        n = self.task_spec["n"]
        return [TextBlock(text=MALFORMED_PROMPT if n == 3 else f"Task {n}: answer with one word.")]

    @tool
    def step(self, params: StepParams) -> ToolOutput:
        """Take a step whose answer has the given shape.

        Args:
            case: The name of the answer's shape.
        """
        if params.case == "huge":
            return ToolOutput(blocks=[TextBlock(text="huge")], reward=1e39)
        text = "x" * LONG_OUTPUT if params.case == "long" else f"answered {params.case}"
        return ToolOutput(blocks=[TextBlock(text=text)], metadata={"case": params.case}, reward=0.5)

    @terminal
    @tool
    def submit(self, params: SubmitParams) -> ToolOutput:
        """Grade the final answer.

        Args:
            answer: The model's final message.
        """
        case = params.answer.strip()
        return ToolOutput(blocks=[TextBlock(text="graded")], metadata={"case": case}, reward=1.0, finished=True)
