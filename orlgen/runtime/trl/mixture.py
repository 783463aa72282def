"""Datasets that mix tasks of several environments, for TRL's `environment_factory={name: factory}`.

Each row carries the `environment` column TRL routes on. Task-field columns are prefixed with the
environment's name (`helpdesk__customer`), so fields of different environments never share an
Arrow column, whatever their types; a row holds None in the other environments' columns.

Weights and GRPO groups. A row is one task; GRPOTrainer's sampler (`RepeatSampler`) plays each
row `num_generations` times in a row, a group, and normalises rewards within the group. So
weights set the share of rows (tasks, groups) per environment, and completions follow the same
shares exactly, each row counting `num_generations` completions whatever its environment; one
generation batch holds `generation_batch_size // num_generations` rows drawn from the shuffled
dataset, so a batch's shares vary around the weights and only the dataset's match them. A
mixture config's `weights` are recorded in its module as `build_dataset`'s default.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..data.dataset import DatasetError
from ..data.spec import EnvSpec
from ..surface import dataset_builder

SHARED_COLUMNS = ("prompt", "split", "task_index")
PREFIX_SEPARATOR = "__"


class BuildMixture(Protocol):
    """The signature of a mixture module's `build_dataset` (documented on `mixture_builder`)."""

    def __call__(
        self,
        split: str = "train",
        *,
        counts: Mapping[str, int] | None = None,
        weights: Mapping[str, float] | None = None,
        num_tasks: int | None = None,
        seed: int = 0,
    ) -> Any: ...


def mixture_builder(
    members: Mapping[str, EnvSpec], module: str, weights: Mapping[str, float] | None = None
) -> BuildMixture:
    """The `build_dataset` of the mixture module named `module`, over its members' specs by name;
    `weights`: the mixture config's, used when a call gives `num_tasks` and neither `counts` nor
    `weights` (shown in `build_dataset`'s docstring)."""
    builders = {name: dataset_builder(spec, module) for name, spec in members.items()}
    splits = {name: spec.dataset.num_tasks for name, spec in members.items()}
    recorded = dict(_known(weights, splits)) if weights is not None else None
    if recorded is not None:
        _allocate(0, recorded)  # refuses negative or all-zero weights at import, in one line

    def build_dataset(
        split: str = "train",
        *,
        counts: Mapping[str, int] | None = None,
        weights: Mapping[str, float] | None = None,
        num_tasks: int | None = None,
        seed: int = 0,
    ) -> Any:
        """A `datasets.Dataset` mixing tasks of every environment, for GRPOTrainer's `train_dataset`.

        Each row has an `environment` column (TRL picks the adapter class by it), `prompt`, `split`,
        `task_index`, and its environment's task fields prefixed with the environment's name
        (`<name>__<field>`). Tasks are drawn at random with `seed`, then shuffled together.

        Args:
            split: The split to draw from, in every environment.
            counts: Tasks to draw per environment, e.g. {"echo": 8}; environments not named get none.
            weights: Relative shares per environment, with `num_tasks` as the total (the share of
                rows, so of GRPO groups; default: the mixture's recorded weights, when it has some).
            num_tasks: The mixture's size when `weights` is given.
            seed: Seed of the draw and of the shuffle.
        """
        if weights is None and counts is None and num_tasks is not None:
            weights = recorded
        return mix(builders, splits, split, counts=counts, weights=weights, total=num_tasks, seed=seed)

    if recorded is not None and build_dataset.__doc__ is not None:
        shown = ", ".join(f"{name!r}: {weight!r}" for name, weight in sorted(recorded.items()))
        build_dataset.__doc__ = (
            f"{build_dataset.__doc__.rstrip()}\n\n        Recorded weights (the mixture config's): {{{shown}}}.\n"
        )
    build_dataset.__module__ = module
    build_dataset.__qualname__ = "build_dataset"
    return build_dataset


def mix(
    builders: Mapping[str, Callable[..., Any]],
    num_tasks: Mapping[str, Mapping[str, int]],
    split: str,
    *,
    counts: Mapping[str, int] | None = None,
    weights: Mapping[str, float] | None = None,
    total: int | None = None,
    seed: int = 0,
) -> Any:
    """Draw `counts[env]` tasks from each environment (or `total` tasks split by `weights`, equal
    weights when only `total` is given, every task when nothing is), at random with `seed`, and
    shuffle them together."""
    from datasets import Dataset

    wanted = _counts(num_tasks, split, counts, weights, total)
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for env, count in wanted.items():
        indices = sorted(rng.sample(range(num_tasks[env][split]), count))
        part = builders[env](split, indices=indices) if indices else []
        for row in part:
            rows.append(
                {
                    "environment": env,
                    **{key: row[key] for key in SHARED_COLUMNS},
                    **{
                        f"{env}{PREFIX_SEPARATOR}{key}": value
                        for key, value in row.items()
                        if key not in SHARED_COLUMNS
                    },
                }
            )
    rng.shuffle(rows)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    return Dataset.from_dict({column: [row.get(column) for row in rows] for column in columns})


def _counts(
    num_tasks: Mapping[str, Mapping[str, int]],
    split: str,
    counts: Mapping[str, int] | None,
    weights: Mapping[str, float] | None,
    total: int | None,
) -> dict[str, int]:
    """Tasks to draw per environment, in name order (so the draw ignores the caller's dict order)."""
    if counts is not None and (weights is not None or total is not None):
        raise DatasetError("pass counts, or weights with num_tasks, not both")
    if counts is None and weights is None and total is None:
        counts = {env: splits.get(split, 0) for env, splits in num_tasks.items()}
        _require_split(num_tasks, split, list(num_tasks))
    elif counts is None:
        if total is None:
            raise DatasetError("weights need num_tasks: the size of the mixture")
        counts = _allocate(total, _known(weights if weights is not None else dict.fromkeys(num_tasks, 1.0), num_tasks))
    chosen = {env: counts.get(env, 0) for env in sorted(_known(counts, num_tasks))}
    if any(not isinstance(count, int) or isinstance(count, bool) for count in chosen.values()):
        raise DatasetError(f"counts must be whole numbers, not {dict(chosen)}")
    _require_split(num_tasks, split, [env for env, count in chosen.items() if count])
    for env, count in chosen.items():
        available = num_tasks[env].get(split, 0)
        if not 0 <= count <= available:
            raise DatasetError(f"{env} has {available} tasks in {split!r}, not {count}")
    if not any(chosen.values()):
        raise DatasetError("the mixture would be empty: ask for at least one task")
    return chosen


def _require_split(num_tasks: Mapping[str, Mapping[str, int]], split: str, envs: list[str]) -> None:
    missing = sorted(env for env in envs if split not in num_tasks[env])
    if missing:
        raise DatasetError(f"split {split!r} is missing from {missing}")


def _known(by_env: Mapping[str, Any], num_tasks: Mapping[str, Any]) -> Mapping[str, Any]:
    unknown = sorted(set(by_env) - set(num_tasks))
    if unknown:
        raise DatasetError(f"unknown environments {unknown}; the mixture has {sorted(num_tasks)}")
    return by_env


def _allocate(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """`total` split in proportion to `weights`, remainders to the largest fractions (ties by name)."""
    if not all(math.isfinite(w) and w >= 0 for w in weights.values()) or sum(weights.values()) <= 0:
        raise DatasetError("weights must be finite, non-negative and not all zero")
    scale = total / sum(weights.values())
    exact = {env: w * scale for env, w in weights.items()}
    counts = {env: int(value) for env, value in exact.items()}
    by_fraction = sorted(exact, key=lambda env: (counts[env] - exact[env], env))
    for env in by_fraction[: total - sum(counts.values())]:
        counts[env] += 1
    return counts
