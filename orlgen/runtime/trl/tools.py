"""TRL's calling convention, stated once: which of an adapter's methods are tools, and the module
`__getattr__` that makes a generated module's `reward_funcs`.

`GRPOTrainer` (trl 1.16, `environment_factory`) lists the functions of the environment's class
with `inspect.getmembers(type(instance), inspect.isfunction)` (on the class, so properties are not
evaluated), treats `reset` and `get_reward` as the protocol and every other public name as a tool.
`orlgen eval`, the verifier child and the tests show the model the same tools by calling this.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
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


def reward_funcs_getattr(module: str, funcs: Iterable[Callable[..., Any]]) -> Callable[[str], list[Any]]:
    """The module's `__getattr__`: `reward_funcs` is a new list on every access, because
    GRPOTrainer appends its get_reward wrapper to the list it is given, and a shared list would
    hand that wrapper to the next trainer (the reward counted twice). Each adapter class scores
    its own rollouts through get_reward() (the column named after the class), so the list holds
    no scorer, only `submit_final_message` when an env has a terminal tool (once, in a mixture)."""
    chosen = tuple(dict.fromkeys(funcs))

    def __getattr__(name: str) -> list[Any]:
        if name == "reward_funcs":
            return list(chosen)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
