"""`--out FILE.jsonl`: one row per finished rollout, in TRL's conversational format.

A row trains as-is with TRL's `SFTTrainer` (`messages`, and `tools` as JSON text, which
SFTTrainer decodes) and loads with `datasets.load_dataset("json", ...)`. What varies in shape
from row to row is stored as JSON text so Arrow can type every column: tool-call `arguments`
(JSON text is also the OpenAI form, and TRL's templates render it verbatim), `tools` and the
per-step `metadata`. Image parts of a message become the text `[image]`.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import IO, Any

from .policy import arguments_text, tool_schemas
from .rollout import Rollout


def row(rollout: Rollout, model: str) -> dict[str, Any]:
    return {
        "env": rollout.env,
        "split": rollout.split,
        "task_index": rollout.task_index,
        "sample": rollout.sample,
        "seed": rollout.seed,
        "model": model,
        "messages": [_message(message) for message in rollout.messages],
        "tools": json.dumps(tool_schemas(rollout.tools), ensure_ascii=False) if rollout.tools else "[]",
        "rewards": rollout.rewards,
        "reward": rollout.reward,
        "outcome": rollout.outcome,
        "unscored_reason": rollout.unscored_reason,
        "reason": rollout.reason,
        "stop": rollout.stop,
        "turns": rollout.turns,
        "tool_calls": rollout.tool_calls,
        "tool_errors": rollout.tool_errors,
        "metadata": json.dumps(rollout.metadata, ensure_ascii=False, default=str),
        "timings": {name: round(seconds, 6) for name, seconds in sorted(rollout.timings.items())},
    }


def _message(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"], "content": _text(message.get("content"))}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {"type": "function", "function": {"name": call["function"]["name"], "arguments": arguments_text(call)}}
            for call in message["tool_calls"]
        ]
    if message["role"] == "tool":
        out["name"] = message.get("name")
    return out


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") if part.get("type") == "text" else "[image]" for part in content if isinstance(part, dict)
    )


class Writer:
    """Appends rows as rollouts finish (flushed each time), so an interrupted run keeps all it did.
    The file is truncated when the run starts."""

    def __init__(self, path: Path | None, model: str) -> None:
        self.path = path
        self.model = model
        self.count = 0
        self._lock = threading.Lock()
        self._file: IO[str] | None = path.open("w", encoding="utf-8") if path is not None else None

    def write(self, rollout: Rollout) -> None:
        if self._file is None:
            return
        line = json.dumps(row(rollout, self.model), ensure_ascii=False, allow_nan=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
            self.count += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
