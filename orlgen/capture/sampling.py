"""Which tasks a capture reads: the probe indices and the sample of a large split."""

from __future__ import annotations

import math
from typing import Literal

from orlgen.snapshot.recorded import ALL_TASKS_UP_TO, SAMPLE_SIZE, TaskMode

Coverage = Literal["all", "sample", "none"]  # what a split's stored tasks are of it

SAMPLE_CHUNKS = 3  # the sample's second half: this many evenly spaced runs, one request each


def reads(num_tasks: int, tasks: TaskMode) -> tuple[list[tuple[int, int]], Coverage]:
    """The [start, stop) runs of a split of `num_tasks` to read for `--tasks tasks`, and the
    coverage stored. `none` stores no task but still reads a sample: the task schema decides the
    generated dataset's columns, and it needs evidence."""
    mode = "none" if tasks == 0 else tasks
    if mode is None:
        mode = "all" if num_tasks <= ALL_TASKS_UP_TO else SAMPLE_SIZE
    if num_tasks == 0:
        return [], "none"
    if mode == "all" or (mode != "none" and mode >= num_tasks):
        return [(0, num_tasks)], "all"
    if mode == "none":
        return sample_runs(num_tasks, SAMPLE_SIZE), "none"
    return sample_runs(num_tasks, mode), "sample"


# Task-only tools often follow the task index: offered on odd tasks, on every third one. The
# probes meet as many residues of these moduli as their number allows.
_PATTERN_MODULI = (2, 3, 4)


def probe_indices(total: int, count: int) -> list[int]:
    """`count` task indices of range(total) to probe for task-only tools.

    Tasks 0 and 1 first: adjacent, so a tool offered on even or on odd tasks only is met. The
    other probes are spread over the rest of the split, one per equal share; each takes, of the
    indices near its share's middle, the one that meets the most residues modulo 2, 3 and 4 not
    met yet (three probes of a 12-task split: 0, 1, 11 meet every residue mod 2 and 3)."""
    if total <= 0 or count <= 0:
        return []
    count = min(count, total)
    chosen = list(range(min(count, 2)))
    rest, span = count - len(chosen), total - 2
    for j in range(rest):
        low, high = 2 + j * span // rest, 2 + (j + 1) * span // rest  # this probe's share: [low, high)
        middle = (low + high - 1) / 2
        met = {(m, i % m) for i in chosen for m in _PATTERN_MODULI}
        window = math.lcm(*_PATTERN_MODULI)  # residues repeat past it: no need to look further
        candidates = range(max(low, math.floor(middle) - window), min(high, math.ceil(middle) + window + 1))
        chosen.append(
            max(candidates, key=lambda i: (len({(m, i % m) for m in _PATTERN_MODULI} - met), -abs(i - middle), i))
        )
    return chosen


def sample_runs(total: int, size: int) -> list[tuple[int, int]]:
    """Exactly `min(size, total)` task indices, as [start, stop) runs.

    The first half is the contiguous run from task 0, so `build_dataset(num_tasks=k)` for
    k up to that half needs no network; the second half is `SAMPLE_CHUNKS` runs spread over the
    rest of the split (the last one ends at its end), so the task schema sees its whole range.
    """
    size = min(size, total)
    head = (size + 1) // 2
    rest = size - head
    runs = [(0, head)] if head else []
    chunks = min(SAMPLE_CHUNKS, rest)
    end = head
    for j in range(chunks):
        length = rest // chunks + (j < rest % chunks)
        ideal = head + (j + 1) * (total - head) // chunks - length  # ends where its share of the split ends
        start = max(ideal, end)
        runs.append((start, start + length))
        end = start + length
    return runs
