"""The runtime's one error root, apart from the generator's: generated modules import the
runtime only, never the generator (`orlgen.errors`)."""

from __future__ import annotations


class OrlgenRuntimeError(RuntimeError):
    """A failure of a generated adapter or its connection, explained in one line."""


class ServerDead(OrlgenRuntimeError):
    """The environment's server is gone or stuck (it refuses connections, or sends nothing):
    the breaker opens at once, so every other rollout of the env learns it at its next call."""
