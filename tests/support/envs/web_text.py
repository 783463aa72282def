"""An ORS environment whose tasks hold web text: every character `str.splitlines()` splits on
(the Unicode line-break classes BK, CR, LF and NL, and the ASCII file, group and record
separators), alone, in runs and as CRLF. Its tasks file must
round-trip them byte for byte through capture, `check` and `build_dataset`."""

from __future__ import annotations

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

# Every character `str.splitlines()` treats as a line boundary.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

TASKS = [{"text": f"line one{ch}line two", "crlf": "a\r\nb", "n": i} for i, ch in enumerate(LINE_BREAKS)] + [
    {"text": "\u2028\u2029\x85" * 3 + "\tend", "crlf": "\r\n\r\n", "n": 99}
]


class AnswerParams(BaseModel):
    text: str


class WebText(Environment):
    """Paste the task's text back."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return TASKS

    def get_prompt(self):
        return [TextBlock(text=f"Paste back: {self.task_spec['text']}")]

    @tool
    def answer(self, params: AnswerParams) -> ToolOutput:
        """Paste the text back. Ends the episode."""
        won = params.text == self.task_spec["text"]
        return ToolOutput(blocks=[TextBlock(text="yes" if won else "no")], reward=float(won), finished=True)
