"""Capturing again the way a snapshot was captured, for drift checks (`snapshot --check`,
`diff --against TARGET`); the command a generated module shows is read from the same records
(`orlgen.snapshot.recorded`).

What a snapshot records of its capture: the target (and the env key on the server), the module
name, the splits, the probed tasks, the reward rule, how many tasks each split stored, and the names of the
secrets its sessions needed. A check that captured otherwise (no secret, other probes, another
task sample) would report drift the environment never made.
"""

from __future__ import annotations

from collections.abc import Mapping

from orlgen.capture.options import CaptureOptions
from orlgen.capture.targets import target_kind
from orlgen.errors import ConfigFileError
from orlgen.runtime.ors.secrets import secrets_from_env
from orlgen.snapshot.model import Snapshot
from orlgen.snapshot.recorded import probes_like, tasks_like


def options_like(like: Snapshot, target: str, given: Mapping[str, str] | None = None) -> CaptureOptions:
    """Capture options that repeat `like`'s capture of `target`. Secret values come from `given`
    (`--secret NAME=VALUE`), else from the environment variables the snapshot names: one that
    is set nowhere is an error naming it, not a probe failing later for want of it."""
    secrets = {**secrets_from_env(like.secret_names), **(given or {})}
    missing = sorted(set(like.secret_names) - set(secrets))
    if missing:
        raise ConfigFileError(
            f"{like.file_name} was captured with --secret {missing[0]}: set the environment variable "
            f"{missing[0]} (or pass --secret {missing[0]}=VALUE) to capture it the same way"
        )
    return CaptureOptions(
        env=like.target.env if target_kind(target) == "url" else None,
        name=like.name,
        splits=tuple(split.name for split in like.splits),
        tasks=tasks_like(like),
        probes=probes_like(like),
        reward=like.reward,  # the user's declaration, not the server's: the live side keeps the recorded rule
        toolset=like.toolset,
        secrets=secrets,
    )
