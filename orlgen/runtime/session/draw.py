"""Which task a `reset()` plays when the dataset row names none (TRL's environment-owned data).

`GRPOTrainer(train_dataset=None, environment_factory=...)` feeds every rollout the same
placeholder row, and a mixture may route with rows that carry only an `environment` column, so
the adapter picks the task itself. The draw walks a seeded permutation of the split, one per
adapter class, split and seed, shared by every instance in the process:

- reproducible: the same seed gives the same tasks in the same order, run after run;
- spread and complete: `n` draws visit `n` different tasks, every task once per pass over the
  split (the next pass is a new permutation);
- grouped: with `repeats = num_generations`, each task is served to that many resets in a row,
  so a GRPO group (consecutive rollouts of one row) plays one task;
- per rank: under `torchrun`, rank `r` of `w` takes groups `r, r + w, ...` of the walk (from
  `RANK`/`WORLD_SIZE`), so ranks do not all play the same tasks.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from .. import process

_lock = process.lock()
_walks: dict[tuple[str, str, int], _Walk] = process.per_process({})


@dataclass
class _Walk:
    total: int
    seed: str
    draws: int = 0  # resets served so far in this process
    order: list[int] = field(default_factory=list)
    order_pass: int = -1


def next_task(owner: str, split: str, total: int, *, seed: int = 0, repeats: int = 1) -> int:
    """The task index the next reset of `owner` (an adapter class) plays in `split`."""
    if total <= 0:
        raise ValueError(f"split {split!r} has no tasks to draw from")
    rank, world = _rank()
    with _lock:
        walk = _walks.get((owner, split, seed))
        if walk is None or walk.total != total:
            walk = _walks[(owner, split, seed)] = _Walk(total, f"{owner}:{split}:{seed}")
        group = walk.draws // max(1, repeats)
        walk.draws += 1
        position = group * world + rank
        pass_, offset = divmod(position, total)
        if walk.order_pass != pass_:
            walk.order = list(range(total))
            random.Random(f"{walk.seed}:{pass_}").shuffle(walk.order)
            walk.order_pass = pass_
        return walk.order[offset]


def _rank() -> tuple[int, int]:
    try:
        rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 0, 1
    return (rank, world) if 0 <= rank < world else (0, 1)
