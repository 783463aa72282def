"""The openreward SDK's environment names, as ors-sdk 0.1.0 spells them: the test envs written for
the openreward SDK (`examples.echo:Echo`, `tests.support.envs.counting:Counting`, ...) served by
ors-sdk's `ors.Server`, the second ORS implementation the runtime is tested against, without a
second copy of each env.

`import_ported("examples.echo")` imports a fresh copy of that module with `openreward` and
`openreward.environments` bound to this module, so its classes subclass `ors.Environment` and its
blocks are ors' own; the server is ors-sdk's, untouched. Only the child process that serves the
env calls it (`tests/support/servers/both.py`), so the real `openreward` is never imported there.

What the SDK has and ors-sdk 0.1.0 has not is written here the ors-sdk way:
- a synchronous tool, `setup` or `teardown` runs in a worker thread (the SDK's server does; ors'
  runs it on its event loop, where one `time.sleep` would stall every session and every ping);
- `@tool(concurrent=..., exclusive=...)` keeps only `shared` (ors-sdk has no per-session locks).
Everything else (`list_splits` returning names, `list_task_tools`, `ToolSpec`, image blocks) is
ors-sdk's as it stands.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import ors
from ors import ImageBlock, ListToolsOutput, Split, TextBlock, ToolOutput, ToolSpec

__all__ = ["Environment", "ImageBlock", "ListToolsOutput", "Split", "TextBlock", "ToolOutput", "ToolSpec", "tool"]

_HOOKS = ("setup", "teardown")


def _threaded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` (synchronous) as a coroutine function that runs it in a worker thread; `__wrapped__`
    keeps its signature and hints for ors' tool introspection."""

    @functools.wraps(fn)
    async def run(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    return run


def tool(fn: Callable[..., Any] | None = None, *, shared: bool = True, **_locks: bool) -> Any:
    """`openreward.environments.tool`: `@tool`, `@tool(shared=False)`; `concurrent` and
    `exclusive` are accepted and dropped."""
    if fn is None:
        return lambda f: tool(f, shared=shared)
    return ors.tool(shared=shared)(fn if inspect.iscoroutinefunction(fn) else _threaded(fn))


class Environment(ors.Environment):
    """`ors.Environment` whose subclasses' synchronous `setup` and `teardown` run in a thread."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in _HOOKS:
            hook = cls.__dict__.get(name)
            if hook is not None and not inspect.iscoroutinefunction(hook):
                setattr(cls, name, _threaded(hook))


def import_ported(name: str) -> ModuleType:
    """A fresh copy of module `name` (written for the openreward SDK) whose environment classes
    are ors-sdk's, imported under its own name."""
    this = sys.modules[__name__]
    saved = {key: sys.modules.get(key) for key in ("openreward", "openreward.environments", name)}
    sys.modules.update({"openreward": this, "openreward.environments": this})
    sys.modules.pop(name, None)
    try:
        return importlib.import_module(name)
    finally:
        for key, module in saved.items():
            if key != name:
                if module is None:
                    sys.modules.pop(key, None)
                else:
                    sys.modules[key] = module
