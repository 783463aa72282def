"""Task-only tools: which tasks offer one, and what a model that calls it elsewhere is told.

TRL lists every tool method of the adapter class on every row (it filters tools per environment
class, not per row), so a model may call a task-only tool on a task that does not offer it, and
an ORS server runs such a call anyway (it does not check the session's tool list). The adapter
refuses it with one line and sends nothing. On a task capture probed, the generated module
already knows the answer; on any other task the session's tool list is read once per rollout,
the first time a task-only tool is called.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

TaskKey = tuple[str, int]  # (split, index)


def refusal(
    tool: str,
    task: TaskKey | None,
    offered_on: Mapping[str, tuple[TaskKey, ...]],
    probed: tuple[TaskKey, ...],
    listed: Callable[[], Collection[str] | None],
) -> str | None:
    """The line for a call to `tool` on `task` when the task does not offer it, else None.
    `listed()` is the session's tool names (None when they could not be read: then the call
    goes to the server, which decides)."""
    if tool not in offered_on or task is None:
        return None
    if task in probed:
        offered = task in offered_on[tool]
    else:
        names = listed()
        offered = names is None or tool in names
    if offered:
        return None
    split, index = task
    return f"{tool} is not offered on this task ({split}[{index}]); it was not run"


def offered(
    tools: Collection[str],
    task: TaskKey | None,
    offered_on: Mapping[str, tuple[TaskKey, ...]],
    probed: tuple[TaskKey, ...],
    listed: Callable[[], Collection[str] | None],
) -> frozenset[str] | None:
    """The tools (of `tools`, wire names) `task` offers: all of them when none is task-only; on a
    task capture probed, the shared ones and the task-only ones it offers, known without asking;
    else `listed()`, the session's (None when they could not be read)."""
    if not offered_on:
        return frozenset(tools)
    if task is not None and task in probed:
        return frozenset(tool for tool in tools if tool not in offered_on or task in offered_on[tool])
    names = listed()
    return None if names is None else frozenset(names)
