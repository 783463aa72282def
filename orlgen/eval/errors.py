"""The eval's failures that stop a run before it starts (exit 2, one line)."""

from __future__ import annotations

from ..errors import OrlgenError


class EvalError(OrlgenError):
    """Bad arguments, or a module that cannot be evaluated (no such environment or split)."""


class Unreachable(EvalError):
    """The model's endpoint or the environment cannot be reached at all."""
