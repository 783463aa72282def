"""TRL's calling convention, stated once: which of an adapter's methods are tools.

`GRPOTrainer` (trl 1.16, `environment_factory`) lists the functions of the environment's class
with `inspect.getmembers(type(instance), inspect.isfunction)` (on the class, so properties are not
evaluated), treats `reset` and `get_reward` as the protocol and every other public name as a tool.
`orlgen eval`, the verifier child and the tests show the model the same tools by calling this.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

PROTOCOL_METHODS = ("reset", "get_reward")  # what TRL calls itself and never shows as tools


def tool_methods(env: Any) -> list[Callable[..., Any]]:
    """The tools TRL shows the model, in TRL's order (sorted by attribute name): bound to `env`
    when it is an adapter instance, plain functions when it is the class. Each carries the name the
    model sees as `__name__` (the wire name, which may differ from the attribute name)."""
    cls = env if isinstance(env, type) else type(env)
    return [
        getattr(env, name)
        for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
        if name not in PROTOCOL_METHODS and not name.startswith("_")
    ]
