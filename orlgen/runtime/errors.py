"""The runtime's one error root, apart from the generator's: generated modules import the
runtime only, never the generator (`orlgen.errors`). And the one-line idiom every message of
orlgen's, runtime's and generator's alike, names a failure with (`first_line`, `described`)."""

from __future__ import annotations


class OrlgenRuntimeError(RuntimeError):
    """A failure of a generated adapter or its connection, explained in one line."""


class ServerDead(OrlgenRuntimeError):
    """The environment's server is gone or stuck (it refuses connections, or sends nothing):
    the breaker opens at once, so every other rollout of the env learns it at its next call."""


def first_line(text: str) -> str:
    """The first line of `text` ("" when it has none): what orlgen prints is one line, and a
    server's, a library's or an exception's text may hold many, or none."""
    lines = text.splitlines()
    return lines[0] if lines else ""


def described(exc: BaseException) -> str:
    """An exception in one line, `Type: message`: how a message names what failed."""
    return first_line(f"{type(exc).__name__}: {exc}")
