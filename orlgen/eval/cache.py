"""`--cache DIR`: the model's answers, kept so that a repeated run asks the model nothing.

An answer is keyed by the sha256 of the canonical JSON of everything sent for it: the endpoint,
the model, the messages, the tools and the sampling parameters (temperature, seed, max tokens);
never the key. A repeated turn that sends the same is answered from `DIR/<2 hex>/<sha256>.json`,
so a run replays exactly when the model's answer is a function of its request: at temperature 0,
or with a seed the endpoint honours (docs/eval.md says where that does not hold). Only answers
are kept, never failures; each is written temp-then-rename, so a reader sees a whole entry or none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..disk import write_atomic
from .errors import EvalError


class Cache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def open(cls, directory: Path) -> Cache:
        """The cache in `directory`, created when missing; one line when it cannot be one."""
        if directory.exists() and not directory.is_dir():
            raise EvalError(f"--cache {directory} is a file, not a directory")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EvalError(f"--cache {directory}: cannot create it: {exc.strerror}") from exc
        return cls(directory)

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The answer kept for `request`; None when there is none (or it is unreadable)."""
        try:
            answer = json.loads(self._path(request).read_bytes())
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not isinstance(answer, dict):
            return None
        return answer

    def put(self, request: dict[str, Any], answer: dict[str, Any]) -> None:
        write_atomic(self._path(request), json.dumps(answer, sort_keys=True, ensure_ascii=False).encode())

    def _path(self, request: dict[str, Any]) -> Path:
        canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        return self.directory / digest[:2] / f"{digest}.json"
