"""`--out FILE.jsonl` (or `-`, stdout): one row per finished rollout, in TRL's conversational format.

A row trains as-is with TRL's `SFTTrainer` (`messages`, and `tools` as JSON text, which
SFTTrainer decodes) and loads with `datasets.load_dataset("json", ...)`. What varies in shape
from row to row is stored as JSON text so Arrow can type every column: tool-call `arguments`
(JSON text is also the OpenAI form, and TRL's templates render it verbatim), `tools` and the
per-step `metadata`. Image parts of a message become the text `[image]` in `messages` (the
column SFTTrainer reads stays text) and are kept, as PNG data URLs, in `media` (JSON text, for
the report: `html.py`), bounded per image and per row. Secrets are masked. A row is one line
for every reader, `str.splitlines()` too: the characters it splits on that JSON leaves raw
(U+0085, U+2028, U+2029), and a lone surrogate UTF-8 cannot hold, are written as `\\uXXXX`
escapes, as a snapshot's tasks file writes them.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import sys
import threading
from pathlib import Path
from typing import IO, Any

from orlgen.runtime.content import data_url, png
from orlgen.runtime.data.tasks_file import one_line
from orlgen.runtime.redaction import redact

from .errors import EvalError
from .policy import arguments_text
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
        "tools": json.dumps(rollout.tools, ensure_ascii=False),
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
        "started": round(rollout.started, 3),
        "ended": round(rollout.ended, 3),
        "media": json.dumps(media(rollout.messages)),
    }


MAX_IMAGE_BYTES = 256 * 1024  # one image's PNG: a small screenshot fits, a large photo does not
MAX_ROW_IMAGE_BYTES = 2**20  # all images of one row (base64 adds a third): 64 rollouts stay under 90 MB


def media(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The image parts of `messages`, as `{"message": i, "part": j, "url": "data:image/png;base64,..."}`
    (or `"omitted": why` in place of `url` past the bounds), so a report can show what the model saw
    while `messages` stays text."""
    found: list[dict[str, Any]] = []
    spent = 0
    for i, message in enumerate(messages):
        content = message.get("content")
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if not (isinstance(part, dict) and part.get("type") in ("image", "image_url")):
                continue
            data = _png(part.get("image")) if part["type"] == "image" else _data_url_png(part.get("image_url"))
            if data is None:
                found.append({"message": i, "part": j, "omitted": "not an image orlgen can encode"})
            elif len(data) > MAX_IMAGE_BYTES or spent + len(data) > MAX_ROW_IMAGE_BYTES:
                found.append({"message": i, "part": j, "omitted": f"{len(data)} bytes, over the bound"})
            else:
                spent += len(data)
                found.append({"message": i, "part": j, "url": data_url(data)})
    return found


def _data_url_png(image_url: Any) -> bytes | None:
    """The PNG of an OpenAI `image_url` part (the agent loop's: a PNG data URL); None else."""
    url = image_url.get("url") if isinstance(image_url, dict) else None
    prefix = "data:image/png;base64,"
    if not isinstance(url, str) or not url.startswith(prefix):
        return None
    try:
        return base64.b64decode(url.removeprefix(prefix), validate=True)
    except ValueError:
        return None


def _png(image: Any) -> bytes | None:
    """A PIL image as PNG bytes (what the runtime decodes an ImageBlock to); None for anything else."""
    if not hasattr(image, "save"):
        return None
    try:
        return png(image)
    except Exception:  # Pillow raises several unrelated types
        return None


# The fields of a row that the table counts, as `Rollout` names them.
_COUNTED = ("rewards", "reward", "outcome", "reason", "stop", "turns", "tool_calls", "tool_errors")


def rollout_of(record: dict[str, Any]) -> Rollout:
    """A written row as the `Rollout` its statistics need (`stats.summarize`): what a report or a
    resumed run counts from the file. Messages, tools and metadata stay in the row. A row that
    lacks a counted field raises KeyError (TypeError or ValueError for a key of another type):
    a number is never made up for it."""
    rollout = Rollout(
        str(record["env"]),
        str(record["split"]),
        int(record["task_index"]),
        int(record["sample"]),
        int(record["seed"]),
    )
    for name in _COUNTED:
        setattr(rollout, name, record[name])
    rollout.started, rollout.ended = float(record.get("started", 0.0)), float(record.get("ended", 0.0))
    return rollout


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


def masked(value: Any, secrets: list[str]) -> Any:
    """`value` with every secret in every string masked as `***` (and credentials in URLs), as
    capture masks server text: a row holds what servers and the endpoint said."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: masked(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item, secrets) for item in value]
    return value


STDOUT = "-"


class Writer:
    """Appends rows as rollouts finish (flushed each time), so an interrupted run keeps all it did.
    The file is truncated when the run starts, unless `append` (a run directory's rows); `-` is
    stdout. A symbolic link is refused: the rows would land wherever it points. With `keep`, the
    rows written are also kept, as written (`rows`), for `--upload`: nothing is built twice."""

    def __init__(
        self, path: Path | None, model: str, secrets: list[str], *, append: bool = False, keep: bool = False
    ) -> None:
        self.path = path
        self.model = model
        self.secrets = secrets
        self.keep = keep
        self.rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._file: IO[str] | None = None if path is None else _open(path, append)

    def write(self, rollout: Rollout) -> None:
        if self._file is None and not self.keep:
            return
        written = masked(row(rollout, self.model), self.secrets)
        # One row, one line for any reader: what `str.splitlines()` splits on (U+2028, U+0085...)
        # and what UTF-8 cannot hold (a lone surrogate) are escaped as the tasks file escapes them.
        line = one_line(json.dumps(written, ensure_ascii=False, allow_nan=False))
        with self._lock:
            if self._file is not None:
                self._file.write(line + "\n")
                self._file.flush()
            if self.keep:
                self.rows.append(written)

    def close(self) -> None:
        if self._file is not None and self._file is not sys.stdout:
            self._file.close()


def _open(path: Path, append: bool) -> IO[str]:
    if str(path) == STDOUT:
        return sys.stdout
    mode = os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | mode | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise EvalError(f"--out {path} is a symbolic link: refused (name the file itself)") from exc
        raise EvalError(f"cannot write --out {path}: {exc.strerror}") from exc
    return os.fdopen(fd, "w", encoding="utf-8")
