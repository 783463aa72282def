"""The agent loop: one episode of an ORS environment played against an OpenAI-compatible chat
endpoint, for every trainer that hands its user an endpoint and asks for an episode back (AReaL,
ART, Agent Lightning, slime), and for `orlgen eval` of an agent module.

The model is shown `TOOLS` (OpenAI tool definitions, the snapshot's schemas whole) and answers
in `tool_calls`. Each call is checked before anything is sent (an unknown tool, arguments that
are not a JSON object or that the tool's params model rejects: one line back to the model, the
call counted as its failure) and played through `Episode`: the same session budget, breaker,
task-only tools, secrets masking and reward rule as every other trainer's module. The episode
ends when the model answers without a call (given to the env's terminal tool, if any), when the
env ends it, or after `max_turns`; its session is deleted on every path, cancellation included.

`Episode` blocks (its requests run on the runtime's loop thread), so its calls run on a thread
pool (`offload`): one event loop plays many episodes at once.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import surface
from ..data.spec import EnvSpec
from ..episode import Episode, EpisodeState, Step
from ..hermes import MAX_TOOL_CALLS_PER_TURN, BadCall, Tool, content_parts, joined, parsed_call
from ..offload import blocking
from ..ors.blocks import quoted

Message = dict[str, Any]
# The model: (the conversation so far, in OpenAI's format; the tools it is shown) -> the
# endpoint's choice for the next turn (`message`, and whatever else the endpoint sent with it).
Chat = Callable[[list[Message], list[dict[str, Any]]], Awaitable[dict[str, Any]]]

DEFAULT_MAX_TURNS = 10


@dataclass(frozen=True)
class AgentEnv:
    """What an agent module binds: its env's `SPEC`, `NAME` (in log lines), `TOOLS` (what the
    model is shown) and `CALLS` (each tool's name as shown → its wire name and params model)."""

    spec: EnvSpec
    name: str
    tools: Sequence[Mapping[str, Any]]
    calls: Mapping[str, Tool]


@dataclass
class Trajectory:
    """One episode, as a trainer trains on it.

    `messages`: the conversation in OpenAI's format (images as `image_url` parts); `choices`:
    aligned with `messages`, the endpoint's raw choice behind each assistant message (logprobs,
    token ids: what ART and other token-level trainers keep), None elsewhere; `tools`: the tool
    definitions the model was shown; `reward`: by the env's rule, None when unscored (the env
    failed, or nothing scored it); `finished`: the env ended the episode; `stop`: `answered`,
    `episode_over`, `max_turns` or `env_error` (the task could not start); `metrics`: turns,
    tool calls, failed tool calls, whether it was scored and whether the env failed; `state`:
    the episode's own record (each step's reward and metadata, the env's error), once it ended."""

    split: str | None
    task_index: int | None
    messages: list[Message] = field(default_factory=list)
    choices: list[dict[str, Any] | None] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    reward: float | None = None
    finished: bool = False
    stop: str = ""
    outcome: str = "running"
    metrics: dict[str, float] = field(default_factory=dict)
    state: EpisodeState | None = None

    def append(self, message: Message, choice: dict[str, Any] | None = None) -> None:
        self.messages.append(message)
        self.choices.append(choice)


async def play(
    env: AgentEnv,
    task: Mapping[str, Any] | int,
    chat: Chat,
    *,
    split: str | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_tool_calls: int = MAX_TOOL_CALLS_PER_TURN,
    episode_options: Mapping[str, Any] | None = None,
    trajectory: Trajectory | None = None,
) -> Trajectory:
    """Play `task` (a row of the module's `build_dataset`, or a task index of `split`) to its
    reward, the model's turns from `chat`. What `chat` raises ends the episode, its session
    deleted, and is raised again; so is a cancellation. `trajectory`, when given, is the one
    filled (so a caller reads what was played even when this raises)."""
    if max_turns < 1 or max_tool_calls < 1:
        raise ValueError(f"max_turns and max_tool_calls must be at least 1, not {max_turns} and {max_tool_calls}")
    chosen_split, index = _task(env.spec, task, split)
    episode = Episode(env.spec, name=env.name, **dict(episode_options or {}))
    if trajectory is None:
        trajectory = Trajectory(chosen_split, index)
    trajectory.split, trajectory.task_index = chosen_split, index
    try:
        await _run(episode, trajectory, env, chat, max_turns, max_tool_calls)
    except BaseException:
        episode.close(wait=False)  # the server may be gone, or a trainer cancelled a slow episode
        raise
    finally:
        _count(trajectory, episode)
    return trajectory


async def _run(
    episode: Episode, trajectory: Trajectory, env: AgentEnv, chat: Chat, max_turns: int, max_tool_calls: int
) -> None:
    system = env.spec.dataset.system_prompt
    carried = [{"role": "system", "content": system}] if system is not None else None
    if carried:
        trajectory.append(carried[0])
    prompt = await blocking(episode, episode.start, trajectory.split, trajectory.task_index, None, carried)
    trajectory.append({"role": "user", "content": _content(prompt)})
    trajectory.tools = _shown(env, await blocking(episode, lambda: episode.offered))
    if prompt.failure is None:
        trajectory.stop = await _turns(episode, trajectory, env, chat, max_turns, max_tool_calls)
    else:
        trajectory.stop = "env_error"
    trajectory.reward = await blocking(episode, episode.score, "agent")


async def _turns(
    episode: Episode, trajectory: Trajectory, env: AgentEnv, chat: Chat, max_turns: int, max_tool_calls: int
) -> str:
    """The model's turns; returns why they stopped."""
    for _ in range(max_turns):
        choice = await chat(copy.deepcopy(trajectory.messages), trajectory.tools)
        message = _assistant(choice["message"])
        calls = message.get("tool_calls") or []
        if len(calls) > max_tool_calls:  # never run: the model's failed calls, and not in the conversation
            episode.refuse(f"calls past {max_tool_calls} in one turn were not run", count=len(calls) - max_tool_calls)
            message["tool_calls"] = calls = calls[:max_tool_calls]
        trajectory.append(message, choice)
        if not calls:
            await blocking(episode, episode.submit_final_message, message.get("content") or "")
            return "answered"
        for call in calls:
            step = await _call(episode, env, call)
            trajectory.append({"role": "tool", "tool_call_id": str(call.get("id") or ""), "content": _content(step)})
        if episode.state.finished:
            return "episode_over"  # every further call would be refused
    return "max_turns"


async def _call(episode: Episode, env: AgentEnv, call: Mapping[str, Any]) -> Step:
    """One tool call's answer: refused here, with nothing sent, when it can be told wrong without
    the server; else the Episode's (which validates with the params model before sending)."""
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    name = str(function.get("name") or "")
    if call.get("type", "function") != "function":
        return episode.refuse(f"unsupported tool call type {quoted(str(call.get('type')))}")
    parsed = parsed_call(name, function.get("arguments"))
    if isinstance(parsed, BadCall):
        return episode.refuse(parsed.problem)
    tool = env.calls.get(name)
    if tool is None:
        return episode.refuse(f"unknown tool {quoted(name)} (the tools are: {', '.join(sorted(env.calls))})")
    arguments = tool.wire_arguments(parsed.arguments)
    if isinstance(arguments, str):
        return episode.refuse(f"invalid arguments for {name}: {arguments}")
    return await blocking(episode, episode.call, tool.wire, arguments, tool.params)


def _assistant(message: Mapping[str, Any]) -> Message:
    """The endpoint's assistant message as the conversation keeps it: as sent, with the role
    set and the tool calls a list."""
    kept = {**message, "role": "assistant"}
    calls = kept.get("tool_calls")
    kept["tool_calls"] = [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []
    if not kept["tool_calls"]:
        del kept["tool_calls"]
    return kept


def _content(step: Step) -> str | list[dict[str, Any]]:
    """An Episode answer as OpenAI message content: text, or parts with images as `image_url`."""
    return joined(content_parts(step.content, "parts"))


def _shown(env: AgentEnv, offered: frozenset[str] | None) -> list[dict[str, Any]]:
    """The tool definitions this task's session offers (all of them when that is unknown)."""
    return [
        copy.deepcopy(dict(tool))
        for tool in env.tools
        if offered is None or env.calls[tool["function"]["name"]].wire in offered
    ]


def _task(spec: EnvSpec, task: Mapping[str, Any] | int, split: str | None) -> tuple[str, int]:
    if isinstance(task, Mapping):
        return str(task.get("split") or split or spec.default_split), int(task["task_index"])
    if isinstance(task, int) and not isinstance(task, bool):
        return split or spec.default_split, task
    raise TypeError(f"task must be a row of build_dataset() or a task index, not {type(task).__name__}")


def _count(trajectory: Trajectory, episode: Episode) -> None:
    trajectory.state = state = episode.state
    trajectory.finished, trajectory.outcome = state.finished, state.outcome
    trajectory.metrics = {
        "turns": float(sum(message["role"] == "assistant" for message in trajectory.messages)),
        "tool_calls": float(state.tool_calls),
        "tool_errors": float(state.tool_errors),
        "scored": float(trajectory.reward is not None),
        "env_error": float(state.outcome == "env_error"),
    }


def dataset_builder(env: AgentEnv, module: str) -> Callable[..., Any]:
    """The `build_dataset` of the agent module named `module`: the env's tasks as plain dicts
    (the TRL module's rows without TRL's `prompt`: the episode opens the task's own prompt), or
    a `datasets.Dataset` of the same rows."""
    rows_of = surface.dataset_builder(env.spec, module)

    def build_dataset(
        split: str | None = None,
        *,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        as_dataset: bool = False,
    ) -> Any:
        """The env's tasks, one row each: `split`, `task_index` and one field per task-spec field
        (see `SPEC.dataset.columns`). Pass a row to `run_episode`. Tasks come from the snapshot
        when it holds them (no network), else from the server.

        Args:
            split: The split to draw tasks from (default: `train`, else the first split).
            num_tasks: Take the first `num_tasks` tasks (default: all of them).
            indices: Take exactly these task indices instead.
            base_url: Server to fetch tasks the snapshot lacks from.
            api_key: OpenReward API key, for catalog targets.
            as_dataset: Return a `datasets.Dataset` instead of a list of dicts.
        """
        chosen = split or env.spec.default_split
        rows = rows_of(chosen, num_tasks=num_tasks, indices=indices, base_url=base_url, api_key=api_key)
        rows = rows.remove_columns("prompt")
        return rows if as_dataset else [dict(row) for row in rows]

    build_dataset.__module__ = module
    build_dataset.__qualname__ = "build_dataset"
    return build_dataset
