"""What a capture is asked for: `CaptureOptions`, and the bounds read from the environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from orlgen.errors import CaptureError
from orlgen.snapshot.model import Reward
from orlgen.snapshot.recorded import DEFAULT_PROBES, TaskMode


def _env_number(name: str, default: float) -> float:
    """A positive number from the environment variable `name`, else `default`."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise CaptureError(f"{name}={raw!r} is not a positive number")
    return value


@dataclass(frozen=True)
class CaptureOptions:
    env: str | None = None  # the environment's key on a multi-environment server
    name: str | None = None  # module name; default from the catalog name or the env key
    splits: tuple[str, ...] = ()  # capture only these splits (default: all)
    tasks: TaskMode = None  # "all", "none", a sample size, or None for the size-based default
    probes: int = DEFAULT_PROBES  # sessions opened per split to discover task-only tools
    reward: Reward = field(
        default_factory=Reward
    )  # the env's reward rule, as its author documents it (recorded, not probed)
    toolset: str | None = None  # a built-in toolset the probe sessions open with (the SDK's `toolset=`)
    # name → value, sent with every probe session. Only the names reach the snapshot.
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    # Bounds on what a server may cost us, overridable from the environment.
    max_answer_bytes: int = field(default_factory=lambda: int(_env_number("ORLGEN_MAX_ANSWER_MB", 64) * 2**20))
    request_timeout: float = field(default_factory=lambda: _env_number("ORLGEN_REQUEST_TIMEOUT", 120))
    deadline: float = field(default_factory=lambda: _env_number("ORLGEN_CAPTURE_DEADLINE", 1800))
    # Where a capture's one-line notes go (a probe whose setup failed); default: the `orlgen` logger.
    note: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
