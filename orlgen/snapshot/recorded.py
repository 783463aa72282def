"""What a snapshot records of its capture, read back: the task sample and probes that repeat it,
its module's default name, and the exact `orlgen snapshot` command a generated module shows.

The capture defaults live here, beside the code that reads records against them, so that the
offline stages (plan shows the command) need nothing of capture, and capture uses the same
numbers it is read back with.
"""

from __future__ import annotations

import shlex
from typing import Literal

from orlgen import names
from orlgen.snapshot.model import Snapshot, Target

TaskMode = Literal["all", "none"] | int | None  # `--tasks`: "all", "none", a sample size, or None for the default

ALL_TASKS_UP_TO = 1000  # `--tasks` default: a split this small is captured whole ...
SAMPLE_SIZE = 200  # ... a larger one as a sample of this many
DEFAULT_PROBES = 3  # `--probes` default: sessions opened per split to discover task-only tools


def default_name(target: Target) -> str:
    """The module name of an environment no directory has yet: from the catalog name on the
    platform (`Eigent/SETA` → `eigent_seta`), else from the env key (`echoenvironment` → `echo`)."""
    return names.slug(target.value) if target.kind == "catalog" else names.env_slug(target.env)


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
    rule = snapshot.reward.rule
    if rule.reduce != "last":
        words += ["--reward", rule.reduce]
    if rule.unfinished is not None:
        words += ["--unfinished-reward", repr(rule.unfinished)]
    if rule.clamp is not None:
        words += ["--reward-clamp", f"{rule.clamp[0]!r}:{rule.clamp[1]!r}"]
    if snapshot.toolset is not None:
        words += ["--toolset", snapshot.toolset]
    for name in snapshot.secret_names:
        words += ["--secret", name]
    return shlex.join(words)
