"""TRL's side of every comparison: its `trl.experimental.openreward` binder imported quietly, its
addressing of a single-host server, its tool binding and its environment factory."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from typing import Any

from bench.common import child_env, environ

LOGGER = "trl.experimental.openreward"


def environment_module() -> Any:
    """`trl.experimental.openreward.environment`, without the experimental-import warning."""
    with warnings.catch_warnings():  # "You are importing from 'trl.experimental'"
        warnings.simplefilter("ignore")
        from trl.experimental.openreward import environment
    return environment


def open_reward_spec() -> Any:
    """`OpenRewardSpec`, its binder's warnings (one per skipped tool) silenced for good."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from trl.experimental.openreward import OpenRewardSpec
    logging.getLogger(LOGGER).setLevel(logging.ERROR)
    return OpenRewardSpec


@contextlib.contextmanager
def quiet_binder() -> Iterator[None]:
    """The binder's warnings silenced inside the block only."""
    logger = logging.getLogger(environment_module().__name__)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def rollout_class(name: str) -> type:
    """A fresh `_RolloutEnvironment` subclass, as `OpenRewardSpec` makes one per env."""
    return type(name, (environment_module()._RolloutEnvironment,), {})


def listed(name: str, description: str, input_schema: dict[str, Any] | None) -> dict[str, Any]:
    """A tool as the server lists it, as TRL's `_bind_tool_method` takes it."""
    return {"name": name, "description": description, "input_schema": input_schema or {}}


def trl_addressing(url: str) -> contextlib.AbstractContextManager[None]:
    """TRL's `OpenRewardSpec(url)` builds `OpenReward(base_url=url)` and `environments.get(name)`
    without a base_url, so the SDK sends env calls to `sessions.<host>`: a single-host server
    needs OPENREWARD_SESSION_URL / OPENREWARD_API_URL pointing at it (read when the client is made)."""
    return environ(OPENREWARD_SESSION_URL=url, OPENREWARD_API_URL=url)


def trl_env(url: str) -> dict[str, str]:
    """A child's environment for TRL against `url`."""
    return child_env(OPENREWARD_SESSION_URL=url, OPENREWARD_API_URL=url)


def factory(url: str, num_tasks: int) -> Any:
    """`OpenRewardSpec(url).environment_factory`, called once: tool discovery happens there, once,
    as in a trainer."""
    with trl_addressing(url):
        spec = open_reward_spec()(url, num_tasks=num_tasks)
        made = spec.environment_factory
        made()
    return made
