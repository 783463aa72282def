"""Opt-in session prefetch for GRPOTrainer's serial `reset` (`EnvAdapter(prefetch=n)`).

GRPOTrainer resets the same task `num_generations` times in a row, one rollout after another, so
on an environment whose sessions take seconds to open (a sandbox starting) a batch waits for
the sum of its setups. With `prefetch=n`, the first `reset` of a task opens `n` sessions for it
together and keeps the `n - 1` it does not use; the next resets of that task take one each. When
a reset asks for another task, the sessions left for the previous one are deleted unused: that
is the cost, up to `n - 1` extra sessions whenever a group is cut short (the dataset's last
group, or rows not in groups). Measured in `bench` scenario 8: about 2× less env-time per
serial batch at 1 s setup, 200 ms tools. Off by default, and not for AsyncGRPOTrainer, which
already opens its rollouts' sessions concurrently.

Several ranks. TRL's sampler repeats each prompt `num_generations` times in a row and every
process takes the next `per_device_train_batch_size * steps_per_generation` rows of that stream
(measured, trl 1.16: `num_generations=8`, 4 rows per device, 2 ranks: each rank resets one task
4 times per step, the other rank the same task's other 4). So a process sees at most
`rows_per_process(...)` resets of a task in a row, and that is what it should prefetch. An
adapter also learns it: once a task's run of resets ends, the next group opens no more sessions
than that run used, so `prefetch=num_generations` under torchrun over-opens one group per
process, not every group.
"""

from __future__ import annotations

from typing import Any

from .. import process

Key = tuple[Any, ...]  # (connection, split, index, secrets): sessions are interchangeable only within a key

_lock = process.lock()
_pool: dict[Key, list[Any]] = process.per_process({})  # sessions opened ahead, by task
_runs: dict[Key, int] = process.per_process({})  # resets of each kept task so far, in this run of it
_learned: dict[Any, int] = process.per_process({})  # connection → the length of its last finished run


def rows_per_process(num_generations: int, per_device_train_batch_size: int, steps_per_generation: int = 1) -> int:
    """The most resets of one task in a row one process makes under GRPOTrainer: a group is
    `num_generations` rows, a process's share of a generation batch is
    `per_device_train_batch_size * steps_per_generation` consecutive rows."""
    return max(1, min(num_generations, per_device_train_batch_size * steps_per_generation))


def width(connection: Any, asked: int) -> int:
    """How many sessions a new group of `connection` opens: `asked`, capped by the last run."""
    with _lock:
        return max(1, min(asked, _learned.get(connection, asked)))


def counted(key: Key) -> None:
    """One more reset of the task `key` in its current run."""
    with _lock:
        _runs[key] = _runs.get(key, 0) + 1


def take(key: Key) -> Any | None:
    """A session opened ahead for exactly this task, if one is left."""
    with _lock:
        sessions = _pool.get(key)
        if sessions:
            return sessions.pop()
    return None


def stale(connection: Any, keep: Key) -> list[Any]:
    """Remove and return the sessions kept for other tasks of `connection`: their group is over."""
    with _lock:
        dropped = [key for key in _pool if key[0] == connection and key != keep]
        for key in dropped:
            if key in _runs:
                _learned[connection] = _runs.pop(key)
        return [session for key in dropped for session in _pool.pop(key)]


def drain() -> list[tuple[Any, Any]]:
    """Every session still kept, with its connection (at exit)."""
    with _lock:
        sessions = [(key[0], session) for key, kept in _pool.items() for session in kept]
        _pool.clear()
    return sessions


def keep(key: Key, sessions: list[Any]) -> None:
    """Keep `sessions` for the next resets of `key` (a new group: its run starts here)."""
    with _lock:
        _pool.setdefault(key, []).extend(sessions)
