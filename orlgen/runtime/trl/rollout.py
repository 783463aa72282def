"""TRL's rollout loop, stated once: one episode of an adapter played as GRPOTrainer plays it
(trl 1.16, `environment_factory`, `_tool_call_loop` and the reward step), the model's turns
coming from any callable.

`reset(**row)` with a row of the module's `build_dataset`, its text appended to the row's last
turn; then model turns; each tool call goes to the adapter's method of that `__name__` with the
call's arguments, and any exception comes back to the model as `{'error': ...}`, as in TRL.
When the model stops calling tools, runs out of turns, or the environment ends the episode, the
module's `reward_funcs` run on the conversation (for an env with a `@terminal` tool they submit
the final assistant message) and `get_reward()` scores the rollout: the sum of the non-null
rewards of all sources, None when all are null.

`orlgen eval` and the tests play their rollouts through this loop, so what eval scores is what
training scores. It knows no model client: `next_turn` is whatever produces the next assistant
message (an endpoint, a local checkpoint, a script), and what it raises ends the rollout and is
raised again, once the adapter's session is freed.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..hermes import MAX_TOOL_CALLS_PER_TURN
from .tools import tool_methods

Message = dict[str, Any]
# The model: the conversation so far (TRL's conversational format, tool-call arguments as dicts)
# and the tools it is shown -> the next assistant message in the same format.
NextTurn = Callable[[list[Message], list[Callable[..., Any]]], Message]


@dataclass(frozen=True)
class Limits:
    """How long a rollout may run: model turns (TRL's `max_tool_calling_iterations` plus the
    answering turn), and tool calls run per turn (an answer cannot make a rollout run thousands)."""

    max_turns: int = 10
    max_tool_calls: int = MAX_TOOL_CALLS_PER_TURN


@dataclass
class TrlRollout:
    """One rollout of `env` (an instance of a generated adapter, or any TRL environment class)
    on dataset row `row`. `play` fills the rest; read it after `play` returns or raises."""

    env: Any
    row: dict[str, Any]
    reward_funcs: list[Any]
    limits: Limits = Limits()
    messages: list[Message] = field(default_factory=list)
    tools: list[Callable[..., Any]] = field(default_factory=list)
    reward: float | None = None
    stop: str = ""  # answered | max_turns | episode_over | failed
    turns: int = 0
    tool_calls: int = 0
    # calls the adapter did not answer (cut past the cap, unknown, malformed, or raising): `{'error': ...}`
    refused_calls: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds: reset_s, model_s, tools_s, score_s

    @property
    def tool_errors(self) -> int:
        """Failed tool calls: those refused here and those the adapter answered with an error."""
        return self.refused_calls + int(self.env.tool_errors)

    def play(self, next_turn: NextTurn) -> TrlRollout:
        """Play the rollout to its reward. Whatever raises (the model's turn, a bug) ends it
        unscored, `stop` "failed", the adapter's session freed, and is raised again."""
        try:
            with self._timed("reset_s"):
                prompt = trl_prompt(self.row, self.env.reset(**self.row))
            self.messages = copy.deepcopy(prompt)
            self.tools = tool_methods(self.env)
            if self.env.outcome != "env_error":
                self._turns(next_turn)
            with self._timed("score_s"):
                self.reward = self._score(prompt, self.messages[len(prompt) :])
        except Exception:
            self.stop = "failed"
            _free_session(self.env)
            raise
        return self

    def _turns(self, next_turn: NextTurn) -> None:
        by_name = {tool.__name__: tool for tool in self.tools}
        for _ in range(self.limits.max_turns):
            with self._timed("model_s"):
                message = next_turn(self.messages, self.tools)
            self._cap_calls(message)
            self.messages.append(message)
            self.turns += 1
            calls = message.get("tool_calls") or []
            if not calls:
                self.stop = "answered"
                return
            with self._timed("tools_s"):
                self.messages += [self._run_call(by_name, call) for call in calls]
            if self.env.finished:
                self.stop = "episode_over"  # every further call would be refused
                return
        self.stop = "max_turns"

    def _cap_calls(self, message: Message) -> None:
        """Keep the first `max_tool_calls` calls of a turn; the rest are never run and count as
        failed calls (the model's fault, like an unknown tool). The kept message is the
        conversation the model sees next, so every call in it is answered."""
        calls = message.get("tool_calls") or []
        cut = len(calls) - self.limits.max_tool_calls
        if cut > 0:
            message["tool_calls"] = calls[: self.limits.max_tool_calls]
            self.tool_calls += cut
            self.refused_calls += cut

    def _run_call(self, by_name: dict[str, Callable[..., Any]], call: dict[str, Any]) -> Message:
        """One tool call, answered as TRL answers it: the method's result (content parts kept,
        anything else as `str`), or `{'error': ...}` for whatever it raised."""
        self.tool_calls += 1
        function = call.get("function") or {}
        name = function.get("name", "unknown")
        try:
            result = _called(by_name, name, call.get("type", "function"), function.get("arguments"))
        except Exception as exc:
            self.refused_calls += 1
            result = {"error": str(exc)}
        message: Message = {
            "role": "tool",
            "name": name,
            "content": result if isinstance(result, list) else str(result),
        }
        if call.get("id"):
            message["tool_call_id"] = call["id"]
        return message

    def _score(self, prompt: list[Message], completion: list[Message]) -> float | None:
        """GRPOTrainer's reward step for one rollout: each reward function, then `get_reward()`
        (weight 1 each); the sum of the non-null ones, None when every source abstains."""
        values: list[Any] = []
        for func in self.reward_funcs:
            values += func(prompts=[prompt], completions=[completion], environments=[self.env])
        values.append(self.env.get_reward())
        scored = [float(value) for value in values if value is not None]
        return sum(scored) if scored else None

    @contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        """Adds the seconds spent in the block to `timings[name]`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start


def trl_prompt(row: dict[str, Any], observation: Any) -> list[Message]:
    """The row's prompt with `reset`'s observation appended to its last message, as TRL does
    (text to text; text and content parts as parts). A copy: the row is left as it was."""
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


def _called(by_name: dict[str, Callable[..., Any]], name: str, kind: Any, arguments: Any) -> Any:
    """The tool's result, or an exception naming why the call cannot run (TRL's wording)."""
    if kind != "function":
        raise ValueError(f"Unsupported tool call type: {kind}")
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments of {name} are not a JSON object: {str(arguments)[:200]}")
    if name not in by_name:
        raise ValueError(f"Tool {name} not found.")
    result = by_name[name](**arguments)
    if inspect.isawaitable(result):  # async tool methods, awaited as GRPOTrainer does
        result = asyncio.run(_awaited(result))
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _free_session(env: Any) -> None:
    """Close the session of a rollout that failed outside the environment (`get_reward` ends it)."""
    try:
        env.get_reward()
    except Exception:
        pass
