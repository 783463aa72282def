"""Capturing again the way a snapshot was captured: for drift checks (`snapshot --check`,
`diff --against TARGET`) and for the exact re-capture command a generated module shows.

What a snapshot records of its capture: the target (and the env key on the server), the module
name, the splits, the probed tasks, the reward rule, how many tasks each split stored, and the names of the
secrets its sessions needed. A check that captured otherwise (no secret, other probes, another
task sample) would report drift the environment never made.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from .config import ConfigFileError
from .identity import default_name
from .options import CaptureOptions, TaskMode
from .runtime.connection import secrets_from_env
from .sampling import ALL_TASKS_UP_TO, SAMPLE_SIZE
from .snapshot import Snapshot
from .targets import target_kind

DEFAULT_PROBES = CaptureOptions().probes


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
        secrets=secrets,
    )


def tasks_like(like: Snapshot) -> TaskMode:
    """The `--tasks` that stores what `like` stored (None: the default does): the same sample
    reads the same tasks, so the inferred task schema changes only when the tasks did. Splits
    with no task store none whatever the option, and tell nothing."""
    stored = [(like.tasks[s.name], s.num_tasks) for s in like.splits if s.name in like.tasks and s.num_tasks]
    if stored and all(tasks.coverage == "none" for tasks, _ in stored):
        return "none"
    samples = [tasks.count for tasks, _ in stored if tasks.coverage == "sample"]
    as_default = all((total <= ALL_TASKS_UP_TO) == (tasks.coverage == "all") for tasks, total in stored)
    if as_default and all(sample == SAMPLE_SIZE for sample in samples):
        return None
    return max(samples) if samples else "all"


def probes_like(like: Snapshot) -> int:
    """The `--probes` that opens the sessions `like` opened: a capture probes `min(probes, tasks)`
    tasks per split, so a split probed less than whole tells the number; else the default does."""
    counts = [(sum(ref.split == split.name for ref in like.probed_tasks), split.num_tasks) for split in like.splits]
    partial = [probed for probed, total in counts if probed < total]
    return max(partial) if partial else max([DEFAULT_PROBES, *(total for _, total in counts)])


def command(snapshot: Snapshot) -> str:
    """The `orlgen snapshot` command that captures the environment again as it was captured."""
    words = ["orlgen", "snapshot", snapshot.target.value]
    if snapshot.target.kind == "url":
        words += ["--env", snapshot.target.env]
    if snapshot.name != default_name(snapshot.target):
        words += ["--name", snapshot.name]
    tasks, probes = tasks_like(snapshot), probes_like(snapshot)
    if tasks is not None:
        words += ["--tasks", str(tasks)]
    if probes != DEFAULT_PROBES:
        words += ["--probes", str(probes)]
    if snapshot.reward != "outcome":
        words += ["--reward", snapshot.reward]
    for name in snapshot.secret_names:
        words += ["--secret", name]
    return shlex.join(words)
