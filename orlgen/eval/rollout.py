"""One rollout, played as GRPOTrainer plays it, on a fresh generated adapter.

`reset(**row)` with a row of the module's `build_dataset`, its text appended to the row's user
turn; then model turns; each tool call goes to the adapter's method of that `__name__` with the
call's arguments, and any exception comes back to the model as `{'error': ...}`, as in TRL's
`_tool_call_loop`. When the model stops calling tools, runs out of turns, or the environment ends
the episode, the module's `reward_funcs` run on the conversation (for an env with a `@terminal`
tool, they submit the final assistant message) and `get_reward()` scores the rollout, as
GRPOTrainer's reward step does: the sum of the non-null rewards of all sources, None when all are
null. A rollout never raises: whatever fails is recorded in `outcome` and `reason`.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..runtime.errors import described, first_line
from ..runtime.hermes import MAX_TOOL_CALLS_PER_TURN
from ..runtime.trl import tool_methods
from .policy import Policy, PolicyError

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
    tools: list[Callable[..., Any]] = field(default_factory=list)
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
    clock = functools.partial(_timed, rollout.timings)
    env = None
    try:
        env = factory()
        with clock("reset_s"):
            prompt = _prompt(row, env.reset(**row))
        rollout.messages = copy.deepcopy(prompt)
        rollout.tools = tool_methods(env)
        if env.outcome != ENV_ERROR:
            _turns(rollout, env, policy, settings, clock)
        with clock("score_s"):
            rollout.reward = _score(env, reward_funcs, prompt, rollout.messages[len(prompt) :])
        rollout.outcome, rollout.reason = env.outcome, env.error
    except PolicyError as exc:
        rollout.outcome, rollout.reason, rollout.stop = POLICY_ERROR, first_line(str(exc)), "failed"
    except Exception as exc:
        rollout.outcome, rollout.stop = CRASHED, "failed"
        rollout.reason = described(exc)
    finally:
        if env is not None:
            if rollout.outcome in (POLICY_ERROR, CRASHED):
                rollout.reward = None
                _end(env)
            rollout.rewards, rollout.metadata = list(env.rewards), list(env.metadata)
            rollout.tool_errors += env.tool_errors
        rollout.ended = time.time()
        rollout.timings["total_s"] = rollout.ended - rollout.started
    return rollout


def _prompt(row: dict[str, Any], observation: Any) -> list[dict[str, Any]]:
    """The row's prompt with `reset`'s observation appended to its last message, as TRL does."""
    prompt = copy.deepcopy(list(row["prompt"]))
    if observation is None:
        return prompt
    content = prompt[-1]["content"]
    if isinstance(observation, list) and isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if isinstance(observation, str) and isinstance(content, list):
        observation = [{"type": "text", "text": observation}]
    prompt[-1] = {**prompt[-1], "content": content + observation}
    return prompt


def _turns(rollout: Rollout, env: Any, policy: Policy, settings: Settings, clock: Callable[[str], Any]) -> None:
    by_name = {tool.__name__: tool for tool in rollout.tools}
    chat = policy.start()
    for turn in range(settings.max_turns):
        with clock("model_s"):
            message = chat.turn(
                rollout.messages, rollout.tools, seed=rollout.seed + turn, temperature=settings.temperature
            )
        _cap_calls(rollout, message, settings.max_tool_calls)
        rollout.messages.append(message)
        rollout.turns += 1
        calls = message.get("tool_calls") or []
        if not calls:
            rollout.stop = "answered"
            return
        with clock("tools_s"):
            for call in calls:
                rollout.messages.append(_run_call(rollout, by_name, call))
        if env.finished:
            rollout.stop = "episode_over"  # every further call would be refused
            return
    rollout.stop = "max_turns"


def _cap_calls(rollout: Rollout, message: dict[str, Any], limit: int) -> None:
    """Keep the first `limit` tool calls of a turn; the rest are never run and count as failed
    calls (the model's fault, like an unknown tool). The kept message is the conversation the
    endpoint sees next, so every call in it is answered."""
    calls = message.get("tool_calls") or []
    if len(calls) > limit:
        message["tool_calls"] = calls[:limit]
        rollout.tool_calls += len(calls) - limit
        rollout.tool_errors += len(calls) - limit


def _run_call(rollout: Rollout, by_name: dict[str, Callable[..., Any]], call: dict[str, Any]) -> dict[str, Any]:
    """One tool call, answered as TRL answers it: the method's `str` result, or `{'error': ...}`."""
    rollout.tool_calls += 1
    function = call.get("function") or {}
    name = function.get("name", "unknown")
    try:
        if call.get("type", "function") != "function":
            raise ValueError(f"Unsupported tool call type: {call.get('type')}")
        arguments = function.get("arguments")
        if not isinstance(arguments, dict):
            raise ValueError(f"arguments of {name} are not a JSON object: {str(arguments)[:200]}")
        if name not in by_name:
            raise ValueError(f"Tool {name} not found.")
        result = by_name[name](**arguments)
        if inspect.isawaitable(result):  # async tool methods, awaited as GRPOTrainer does
            result = asyncio.run(_awaited(result))
    except Exception as exc:
        rollout.tool_errors += 1
        result = {"error": str(exc)}
    message: dict[str, Any] = {
        "role": "tool",
        "name": name,
        "content": result if isinstance(result, list) else str(result),
    }
    if call.get("id"):
        message["tool_call_id"] = call["id"]
    return message


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _score(
    env: Any, reward_funcs: list[Any], prompt: list[dict[str, Any]], completion: list[dict[str, Any]]
) -> float | None:
    """GRPOTrainer's reward step for one rollout: each reward function, then `get_reward()`
    (weight 1 each); the sum of the non-null ones, None when every source abstains."""
    values = []
    for func in reward_funcs:
        values += func(prompts=[prompt], completions=[completion], environments=[env])
    values.append(env.get_reward())
    scored = [float(value) for value in values if value is not None]
    return sum(scored) if scored else None


def _end(env: Any) -> None:
    """Close the session of a rollout that failed outside the environment."""
    try:
        env.get_reward()
    except Exception:
        pass


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    """Adds the seconds spent in the block to `timings[name]`."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start
