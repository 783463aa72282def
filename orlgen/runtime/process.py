"""The runtime's per-process state, and what a forked child makes of it.

Everything the runtime keeps for the life of a process (the event-loop thread and its clients,
open sessions and their keepalives, budgets, breakers, counters, caches, their locks) is
declared here with `per_process` (or `lock`), and one `os.register_at_fork` hook resets all of it
in a forked child: `multiprocessing`'s 'fork' start method, a DataLoader worker, a trainer's
worker process. The child inherits a copy of the parent's memory but not its threads, and it
shares the parent's sockets and event-loop selector; what it inherits is the parent's, not its own:

- a container is emptied, and what it held is *forgotten, not finalized*: kept referenced here
  (`_inherited`, which the child leaks on purpose, so that not even its interpreter's teardown
  at exit finalizes it). A finalized aiohttp connector closes its transports: that unregisters
  their sockets from the epoll instance the child shares with the parent (measured: the
  parent's next request on a pooled connection then hears nothing and fails as hung), and a TLS
  transport would write its close_notify into the parent's connection. A loop thread of the
  parent does not exist here and is never joined.
- a lock is released if a thread of the parent held it at the fork (that thread does not exist
  here: the lock would be held forever). `threading.Lock.release` may be called from any thread.
- anything else names its own reset (counters zeroed, a random generator reseeded, the
  parent's sessions dropped from the adapters that held them).

Configuration (`set_max_sessions`) and hooks registered at import are not per-process state: a
child keeps them. `forked()` tells a child apart (a `torch.distributed` store connection, for
one, belongs to the parent).
"""

from __future__ import annotations

import copy
import ctypes
import os
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, overload


class Clearable(Protocol):
    def clear(self) -> None: ...


C = TypeVar("C", bound=Clearable)
S = TypeVar("S")

_IMPORTED_IN = os.getpid()  # the process that imported the runtime; a fork's child differs
_declared: list[tuple[Any, Callable[[Any], None]]] = []  # (state, its reset), in declaration order
_inherited: list[Any] = []  # what a fork's child forgot: never finalized in the child (see above)


@overload
def per_process(state: C) -> C: ...


@overload
def per_process(state: S, reset: Callable[[S], None]) -> S: ...


def per_process(state: Any, reset: Callable[[Any], None] | None = None) -> Any:
    """Declare `state` this process's own and return it. A forked child resets it with `reset`;
    by default a container is emptied, its contents forgotten without being finalized."""
    _declared.append((state, reset or forget))
    return state


def lock() -> threading.Lock:
    """A `threading.Lock` declared per process: a forked child finds it free."""
    return per_process(threading.Lock(), _unlock)


def declared() -> list[Any]:
    """Every per-process state, in declaration order (for tests that check a child's are fresh)."""
    return [state for state, _ in _declared]


def forked() -> bool:
    """Whether this process is a fork's child of the one that imported the runtime."""
    return os.getpid() != _IMPORTED_IN


def forget(state: Clearable) -> None:
    """Empty `state` as a fork's child does: its contents are kept referenced, never finalized."""
    _inherited.append(copy.copy(state))
    state.clear()


def _unlock(held: threading.Lock) -> None:
    if held.locked():
        held.release()


def _after_fork_in_child() -> None:
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_inherited))  # never freed, not even at exit (see above)
    for state, reset in _declared:
        reset(state)


os.register_at_fork(after_in_child=_after_fork_in_child)
