"""One ORS environment written once and served by two independent server implementations: the
openreward SDK's `Server` (`tests.support.envs.both:Both`) and ors-sdk's `ors.Server`
(`tests.support.envs.both:BothOrs`, served by `tests/support/servers/ors_sdk.py`).

Written the way published envs are: pydantic params models with field descriptions, Google
`Args:` docstrings, a reward on a submit tool that finishes the episode, a task-only tool, an
image block, two splits. The logic is in `twin(sdk)`, which builds the class from either SDK's
names; both classes are named `Both`, so both servers serve it as env `both` and one generated
module (captured from the openreward twin) reaches either with `base_url=`. Each twin is built
on first access (PEP 562), so serving the ors twin never imports openreward.
"""

import asyncio
import importlib
from types import ModuleType

from pydantic import BaseModel, Field

# A 1x1 PNG: the image block's payload.
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
TASKS = {"train": [{"id": i, "target": 10 + 7 * i} for i in range(6)], "test": [{"id": 100, "target": 3}]}


class GuessParams(BaseModel):
    guess: int = Field(ge=0, le=100, description="A number between 0 and 100.")


class SubmitParams(BaseModel):
    answer: int = Field(description="The final answer.")


class LongParams(BaseModel):
    size: int = Field(ge=1, le=500_000, description="How many characters to answer with.")


class WaitParams(BaseModel):
    seconds: float = Field(ge=0, le=120, description="How long the tool takes.")


def twin(sdk: ModuleType) -> type:
    """The environment class built from `sdk`'s names (`openreward.environments` or `ors`)."""

    class Both(sdk.Environment):
        """Find the task's target number, then submit it."""

        def __init__(self, task_spec=None, secrets=None):
            super().__init__(task_spec or {}, secrets or {})
            self.guesses = 0
            self.secret_names = sorted(secrets or {})

        @classmethod
        def list_splits(cls):
            return [sdk.Split(name="train", type="train"), sdk.Split(name="test", type="test")]

        @classmethod
        def list_tasks(cls, split: str):
            return TASKS[split]

        def get_prompt(self):
            return [sdk.TextBlock(text=f"Task {self.task_spec['id']}: find the target number, then submit it.")]

        def _text(self, text: str, **fields) -> object:
            return sdk.ToolOutput(blocks=[sdk.TextBlock(text=text)], **fields)

        @sdk.tool
        def guess(self, params: GuessParams) -> sdk.ToolOutput:
            """Compare a guess with the target.

            Args:
                guess: A number between 0 and 100.
            """
            self.guesses += 1
            target = self.task_spec["target"]
            return self._text("equal" if params.guess == target else "higher" if params.guess < target else "lower")

        @sdk.tool
        def submit(self, params: SubmitParams) -> sdk.ToolOutput:
            """Submit the final answer; this ends the episode.

            Args:
                answer: The final answer.
            """
            right = params.answer == self.task_spec["target"]
            return self._text("correct" if right else "wrong", reward=1.0 if right else 0.0, finished=True)

        @sdk.tool
        def look(self) -> sdk.ToolOutput:
            """Look at the board: a picture and a caption."""
            return sdk.ToolOutput(
                blocks=[sdk.ImageBlock(data=PIXEL, mimeType="image/png"), sdk.TextBlock(text="the board")]
            )

        @sdk.tool
        def count(self) -> sdk.ToolOutput:
            """How many guesses this session has taken."""
            return self._text(str(self.guesses))

        @sdk.tool
        def keys(self) -> sdk.ToolOutput:
            """The names of the secrets this session was given."""
            return self._text(",".join(self.secret_names))

        @sdk.tool
        def long(self, params: LongParams) -> sdk.ToolOutput:
            """Answer with a long text.

            Args:
                size: How many characters to answer with.
            """
            return self._text("".join(chr(ord("a") + i % 26) for i in range(params.size)))

        @sdk.tool
        async def wait(self, params: WaitParams) -> sdk.ToolOutput:
            """Take a while, then answer.

            Args:
                seconds: How long the tool takes.
            """
            await asyncio.sleep(params.seconds)
            return self._text(f"waited {params.seconds:g}s")

        @sdk.tool
        def crash(self) -> sdk.ToolOutput:
            """A tool that raises."""
            raise RuntimeError("tool crashed on purpose")

        @sdk.tool(shared=False)
        def hint(self) -> sdk.ToolOutput:
            """A hint about the target (even tasks only)."""
            return self._text(f"the target is {'even' if self.task_spec['target'] % 2 == 0 else 'odd'}")

        def list_task_tools(self):
            if self.task_spec["id"] % 2:
                return sdk.ListToolsOutput(tools=[])
            doc = (Both.hint.__doc__ or "").strip()
            return sdk.ListToolsOutput(tools=[sdk.ToolSpec(name="hint", description=doc, input_schema=None)])

    Both.__qualname__ = "Both"
    Both.__module__ = __name__
    return Both


_SDKS = {"Both": "openreward.environments", "BothOrs": "ors"}


def __getattr__(name: str) -> type:
    if name not in _SDKS:
        raise AttributeError(name)
    cls = twin(importlib.import_module(_SDKS[name]))
    globals()[name] = cls
    return cls
