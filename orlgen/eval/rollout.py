"""One eval rollout: TRL's rollout loop (`orlgen.runtime.trl.rollout`, the loop GRPOTrainer
plays) on a fresh generated adapter, or, for an agent module, the agent loop its `run_episode`
plays (`orlgen.runtime.agent.loop`); the model's turns from the run's policy, and the record a
run keeps of it: which task and sample it was, when it ran, and why it has no reward if it has
none. A rollout never raises: whatever fails is recorded in `outcome` and `reason`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..runtime.agent import loop as agent_loop
from ..runtime.errors import described, first_line
from ..runtime.hermes import MAX_TOOL_CALLS_PER_TURN
from ..runtime.trl.rollout import Limits, NextTurn, TrlRollout
from .policy import ChatEndpoint, Policy, PolicyError, tool_schemas

# Why a rollout has no reward, besides the adapter's outcomes.
POLICY_ERROR = "policy_error"  # the model's endpoint failed mid-rollout
ENV_ERROR = "env_error"  # the adapter's own outcome: the environment failed
CRASHED = "crashed"  # an unexpected error in the rollout loop (a bug: reported, never raised)


@dataclass
class Rollout:
    env: str
    split: str
    task_index: int
    sample: int
    seed: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)  # the tool schemas the model was shown
    rewards: list[float | None] = field(default_factory=list)
    metadata: list[Any] = field(default_factory=list)
    reward: float | None = None
    outcome: str = "running"  # running | finished | env_error | policy_error | crashed
    reason: str | None = None
    stop: str = ""  # answered | max_turns | episode_over | failed
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    started: float = 0.0
    ended: float = 0.0

    @property
    def key(self) -> tuple[str, str, int, int]:
        """Which rollout of a run this is: (env, split, task_index, sample)."""
        return (self.env, self.split, self.task_index, self.sample)

    @property
    def unscored_reason(self) -> str | None:
        """None when scored; else why not: `unfinished` (the episode never ended), `no_reward`
        (it ended with no reward), `env_error`, `policy_error` or `crashed`."""
        if self.reward is not None:
            return None
        return {"running": "unfinished", "finished": "no_reward"}.get(self.outcome, self.outcome)


@dataclass(frozen=True)
class Settings:
    max_turns: int = 10
    temperature: float = 1.0
    # per model turn: an endpoint's answer cannot make a rollout run thousands
    max_tool_calls: int = MAX_TOOL_CALLS_PER_TURN

    @property
    def limits(self) -> Limits:
        return Limits(max_turns=self.max_turns, max_tool_calls=self.max_tool_calls)


def play(
    env_name: str,
    factory: Callable[[], Any],
    reward_funcs: list[Any],
    row: dict[str, Any],
    policy: Policy,
    settings: Settings,
    *,
    sample: int,
    seed: int,
) -> Rollout:
    rollout = Rollout(env_name, str(row.get("split")), int(row["task_index"]), sample, seed, started=time.time())
    played = None
    try:
        played = TrlRollout(factory(), row, reward_funcs, settings.limits)
        played.play(_next_turn(policy, settings, seed))
        rollout.outcome, rollout.reason = played.env.outcome, played.env.error
    except PolicyError as exc:
        rollout.outcome, rollout.reason, rollout.stop = POLICY_ERROR, first_line(str(exc)), "failed"
    except Exception as exc:
        rollout.outcome, rollout.reason, rollout.stop = CRASHED, described(exc), "failed"
    finally:
        if played is not None:
            _keep(rollout, played)
        rollout.ended = time.time()
        rollout.timings["total_s"] = rollout.ended - rollout.started
    return rollout


def _next_turn(policy: Policy, settings: Settings, seed: int) -> NextTurn:
    """The policy's conversation for one rollout, its turns seeded `seed`, `seed + 1`, ..."""
    chat = policy.start()
    turns = itertools.count()

    def turn(messages: list[dict[str, Any]], tools: list[Callable[..., Any]]) -> dict[str, Any]:
        return chat.turn(messages, tools, seed=seed + next(turns), temperature=settings.temperature)

    return turn


def _keep(rollout: Rollout, played: TrlRollout) -> None:
    """What the loop and the adapter left, into the run's record of the rollout."""
    rollout.messages, rollout.reward = played.messages, played.reward
    rollout.tools = tool_schemas(played.tools) if played.tools else []
    rollout.stop, rollout.turns = played.stop, played.turns
    rollout.tool_calls, rollout.tool_errors = played.tool_calls, played.tool_errors
    rollout.rewards, rollout.metadata = list(played.env.rewards), list(played.env.metadata)
    rollout.timings.update(played.timings)


def play_agent(
    env_name: str,
    env: agent_loop.AgentEnv,
    options: dict[str, Any],
    row: dict[str, Any],
    endpoint: ChatEndpoint,
    settings: Settings,
    *,
    sample: int,
    seed: int,
) -> Rollout:
    """An agent module's rollout: the agent loop its `run_episode` plays, its turns asked of the
    run's endpoint (cache and bounds included), seeded `seed`, `seed + 1`, ..."""
    rollout = Rollout(env_name, str(row.get("split")), int(row["task_index"]), sample, seed, started=time.time())
    trajectory = agent_loop.Trajectory(rollout.split, rollout.task_index)
    turns = itertools.count()

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return await endpoint.complete(messages, tools, seed=seed + next(turns), temperature=settings.temperature)
        finally:
            rollout.timings["model_s"] = rollout.timings.get("model_s", 0.0) + time.perf_counter() - started

    try:
        asyncio.run(
            agent_loop.play(
                env,
                row,
                chat,
                max_turns=settings.max_turns,
                max_tool_calls=settings.max_tool_calls,
                episode_options=options,
                trajectory=trajectory,
            )
        )
        rollout.outcome = trajectory.outcome
        rollout.reason = trajectory.state.error if trajectory.state else None
        rollout.stop = "failed" if trajectory.stop == "env_error" else trajectory.stop
    except PolicyError as exc:
        rollout.outcome, rollout.reason, rollout.stop = POLICY_ERROR, first_line(str(exc)), "failed"
    except Exception as exc:
        rollout.outcome, rollout.reason, rollout.stop = CRASHED, described(exc), "failed"
    finally:
        _keep_trajectory(rollout, trajectory)
        rollout.ended = time.time()
        rollout.timings["total_s"] = rollout.ended - rollout.started
    return rollout


def _keep_trajectory(rollout: Rollout, trajectory: agent_loop.Trajectory) -> None:
    """What the agent loop left, into the run's record of the rollout."""
    rollout.messages, rollout.tools, rollout.reward = trajectory.messages, trajectory.tools, trajectory.reward
    rollout.turns = int(trajectory.metrics.get("turns", 0))
    rollout.tool_calls = int(trajectory.metrics.get("tool_calls", 0))
    rollout.tool_errors = int(trajectory.metrics.get("tool_errors", 0))
    if trajectory.state is not None:
        rollout.rewards, rollout.metadata = list(trajectory.state.rewards), list(trajectory.state.metadata)
