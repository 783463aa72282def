"""A hostile twin of the echo env for `tests/test_trust4_session.py`: FAULT INJECTION of server
content. Its class is named `Echo` and its `echo` tool has the echo env's description and
parameters, so `generated/echo.py`'s `EchoEnv(base_url=...)` plays it unchanged, on either server
(`serve("tests.support.servers.session4_envs:Echo")`); what it serves is what a hostile or broken
server may send:

- task 0's prompt is `HUGE_PROMPT` characters long;
- task 1's prompt hides its words behind a right-to-left override (U+202E);
- `echo` answers with the text it was given, as sent (bidi controls included).
"""

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

HUGE_PROMPT = 20_000_000
BIDI_PROMPT = "Call the echo tool with the text \u202eolleh\u202c."


class EchoParams(BaseModel):
    text: str


class Echo(Environment):
    """Echo the target string back to win."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"target": "huge"}, {"target": "bidi"}]

    def get_prompt(self):
        if self.task_spec["target"] == "huge":
            return [TextBlock(text="x" * HUGE_PROMPT)]
        return [TextBlock(text=BIDI_PROMPT)]

    @tool
    def echo(self, params: EchoParams) -> ToolOutput:
        """Echo a text back to the environment. Wins when it equals the target string.

        The episode ends after the first echo.
        """
        return ToolOutput(blocks=[TextBlock(text=params.text)], reward=0.0, finished=True)
