"""ORS environments that stall (a task listing, a session's prompt), so a test can interrupt a
capture mid-way.

Fault injection by design: `list_tasks` touches the file named by `ORLGEN_STALL_FILE` (so the
test knows the capture is waiting on the server) and then sleeps far longer than any test.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel


class LookupParams(BaseModel):
    key: str


class Stalling(Environment):
    """A one-tool environment that never finishes listing its tasks."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        Path(os.environ["ORLGEN_STALL_FILE"]).touch()
        time.sleep(600)
        return [{"question": "never reached"}]

    def get_prompt(self):
        return [TextBlock(text="look something up")]

    @tool
    def lookup(self, params: LookupParams) -> ToolOutput:
        """Look a key up.

        Args:
            key: The key to find.

        Returns:
            The value stored under the key.
        """
        return ToolOutput(blocks=[TextBlock(text=params.key)], reward=1.0)


class StallingSession(Environment):
    """Fault injection: a probe session opens, then its prompt stalls (after touching
    `ORLGEN_STALL_FILE`); deleting the session touches `ORLGEN_TEARDOWN_FILE`, so a test sees
    whether an interrupted capture closed what it opened."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"question": "q"}]

    def get_prompt(self):
        Path(os.environ["ORLGEN_STALL_FILE"]).touch()
        time.sleep(600)
        return [TextBlock(text="never reached")]

    def teardown(self):
        Path(os.environ["ORLGEN_TEARDOWN_FILE"]).touch()

    @tool
    def lookup(self, params: LookupParams) -> ToolOutput:
        """Look a key up.

        Args:
            key: The key to find.

        Returns:
            The value stored under the key.
        """
        return ToolOutput(blocks=[TextBlock(text=params.key)], reward=1.0)
