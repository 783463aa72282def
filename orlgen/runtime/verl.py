"""The verl 0.9 shim: what every generated `<name>_verl.py` module shares (docs/trainers-verl.md).

verl's `ToolAgentLoop` runs each trajectory as an asyncio task of an `AgentLoopWorker` Ray actor,
and drives a tool as `create -> execute -> release` once per tool call, one tool object serving
every trajectory of the worker. So the ORS session lives with the trajectory, not the tool: the
module's registered `OrsAgentLoop` subclass opens one `Episode` when its trajectory starts (the
session's prompt joins the row's user turn, as TRL's loop appends it), keeps it under the
trajectory's `request_id` while the model calls tools, and when the trajectory ends, on every
path, scores it by the env's rule, deletes the session and sets `AgentLoopOutput.reward_score`,
so verl skips its own reward computation. An unscored rollout gets the loop's `unscored_reward`
(0.0 unless the agent-loop config says otherwise: verl needs a number for every sample) and
`ors_scored` 0.0 beside it in `reward_extra_info`, never a silent 0.0.

Each tool's call is checked before any request by the tool's params model (verl's schema model
keeps only `type`, `description` and `enum` of a property), answered in one line when wrong.
Images come back as verl's multimodal tool responses (`ToolResponse.image`) when the loop has a
`processor` (a VLM); verl refuses them to a text-only model, which reads a marker line instead.

`_make_request_id` (where a trajectory's id is made, before its tools run) and
`_handle_generating_state` (where the conversation, `AgentData`, passes by: its last answer is
the final message an env's @terminal tool grades) are verl's private seams: the header pins the
verl range they were read in.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register  # type: ignore[import-not-found]
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop  # type: ignore[import-not-found]
from verl.tools.base_tool import BaseTool  # type: ignore[import-not-found]
from verl.tools.schemas import ToolResponse  # type: ignore[import-not-found]

from . import content as _content
from . import offers, process, surface
from .data.spec import EnvSpec
from .episode import Episode, Step
from .hermes import Tool
from .offload import blocking
from .session.metrics import since_last_rollout

__all__ = ["OrsAgentLoop", "OrsTool", "Tool", "dataset_builder", "register"]

# The episodes of this process's trajectories, by verl's request id (one AgentLoopWorker: one
# process, many trajectories as tasks of one event loop), and whether their model reads images.
_episodes: dict[str, tuple[Episode, bool]] = process.per_process({})


class OrsTool(BaseTool):  # type: ignore[misc]
    """Every ORS tool of an env, one instance per tool entry of the tool YAML (`self.name` is the
    entry's). A generated subclass sets `CALLS` (each name the model calls → its wire name and
    params model)."""

    CALLS: ClassVar[Mapping[str, Tool]]

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        return instance_id or uuid4().hex, ToolResponse()  # per call: the session is the trajectory's

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, float]]:
        agent_data = kwargs.get("agent_data")
        found = _episodes.get(getattr(agent_data, "request_id", None) or "")
        if found is None:
            text = f"Error: {self.name} was not run: this trajectory has no ORS session (its row's agent_name is not this env's loop)"
            return ToolResponse(text=text), 0.0, {"ors_tool_error": 1.0}
        episode, images = found
        tool = self.CALLS[self.name]
        arguments = tool.wire_arguments(parameters if isinstance(parameters, dict) else {})
        if isinstance(arguments, str):
            step = episode.refuse(f"invalid arguments for {self.name}: {arguments}")
        else:
            step = await blocking(episode, episode.call, tool.wire, arguments, tool.params)
        return _response(step, images), float(step.reward or 0.0), {"ors_tool_error": float(step.failure is not None)}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Per call: the session stays open until the trajectory ends (`OrsAgentLoop`)."""


class OrsAgentLoop(ToolAgentLoop):  # type: ignore[misc]
    """One trajectory, one ORS session. A generated subclass sets `SPEC` and `NAME` and registers
    itself (`@register(AGENT_NAME)`); rows name it in `agent_name` (the module's `build_dataset`
    writes them so). Constructor options (the agent-loop config's keys): `unscored_reward`, and
    any `Episode` option as `ors_<option>` (`ors_base_url`, `ors_timeout`, ...)."""

    SPEC: ClassVar[EnvSpec]
    NAME: ClassVar[str] = "Env"

    unscored_reward: float = 0.0
    ors_options: Mapping[str, Any] = {}
    episode: Episode
    _request_id: str | None = None
    _agent_data: Any = None  # verl's AgentData of the trajectory

    def __init__(self, *args: Any, unscored_reward: float = 0.0, **kwargs: Any) -> None:
        self.ors_options = {key.removeprefix("ors_"): kwargs.pop(key) for key in list(kwargs) if key.startswith("ors_")}
        super().__init__(*args, **kwargs)
        self.unscored_reward = float(unscored_reward)

    async def _handle_generating_state(self, agent_data: Any, *args: Any, **kwargs: Any) -> Any:
        """verl's own, keeping its conversation: its last answer, with no call, is the final message."""
        self._agent_data = agent_data
        return await super()._handle_generating_state(agent_data, *args, **kwargs)

    def _make_request_id(self, priority: int, full_determinism: bool) -> str:
        request_id = str(ToolAgentLoop._make_request_id(priority, full_determinism))
        if full_determinism:  # `det-<priority>` repeats across steps: one session per trajectory needs its own
            request_id = f"{request_id}-{uuid4().hex[:8]}"
        self._request_id = request_id
        _episodes[request_id] = (self.episode, self.processor is not None)  # verl refuses images to a text-only model
        return request_id

    async def run(self, sampling_params: dict[str, Any], priority: int = 0, **kwargs: Any) -> AgentLoopOutput:
        """The trajectory, its session opened first and deleted last, whatever happens between."""
        self.episode = episode = Episode(self.SPEC, name=self.NAME, owner=type(self), **self.ors_options)
        self._request_id, self._agent_data = None, None
        extra = kwargs.get("extra_info") or {}
        try:
            prompt = await blocking(episode, episode.start, extra.get("split"), extra.get("task_index"), None, None)
            kwargs["raw_prompt"] = _with_prompt(kwargs["raw_prompt"], prompt)
            output = await super().run(sampling_params, priority=priority, **kwargs)
            final = _final_message(self._agent_data)
            if final is not None:  # graded by the env's @terminal tool, if it has one
                await blocking(episode, episode.submit_final_message, final)
            reward = await blocking(episode, episode.score, "verl")
        finally:
            _episodes.pop(self._request_id or "", None)
            episode.close(wait=False)
        output.reward_score = self.unscored_reward if reward is None else float(reward)
        state = episode.state
        output.extra_fields["reward_extra_info"] = {
            "ors_scored": float(reward is not None),
            "ors_finished": float(state.finished),
            "ors_env_error": float(state.outcome == "env_error"),
            "ors_tool_calls": float(state.tool_calls),
            "ors_tool_errors": float(state.tool_errors),
            # The runtime's counters, by the same names in every sample (verl reads the first's keys).
            **{f"ors_{name}": value for name, value in since_last_rollout().items()},
        }
        return output


def _final_message(agent_data: Any) -> str | None:
    """The model's last answer when it called no tool (the trajectory's final message), else None."""
    messages = getattr(agent_data, "messages", None) or []
    if not messages or messages[-1].get("role") != "assistant" or getattr(agent_data, "tool_calls", None):
        return None
    content = messages[-1].get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else None


def _with_prompt(raw_prompt: Sequence[Mapping[str, Any]], prompt: Step) -> list[dict[str, Any]]:
    """The row's chat with the session's prompt appended to its last turn (text; an image as a
    marker), as TRL's loop appends `reset`'s observation."""
    messages = [dict(message) for message in copy.deepcopy(list(raw_prompt))]
    text = _content.as_text(prompt.content)
    last = messages[-1]
    last["content"] = f"{last.get('content') or ''}{text}" if isinstance(last.get("content"), str | None) else text
    return messages


def _response(step: Step, images: bool) -> Any:
    """An Episode answer as verl's tool response: its text, its images as PIL images for a model
    that reads them (a loop with a `processor`), else a marker line each."""
    if isinstance(step.content, str) or not images:
        return ToolResponse(text=_content.as_text(step.content))
    text = "".join(part["text"] for part in step.content if part["type"] == "text")
    pictures = [part["image"] for part in step.content if part["type"] == "image"]
    return ToolResponse(text=text, image=pictures or None)


def dataset_builder(loop: type[OrsAgentLoop], calls: Mapping[str, Tool], agent_name: str, module: str) -> Any:
    """The `build_dataset` of the generated module named `module`: the env's tasks as rows in
    verl's dataset shape, for `loop` (registered as `agent_name`) and its tools `calls`."""
    rows_of = surface.dataset_builder(loop.SPEC, module)
    shown = {tool.wire: name for name, tool in calls.items()}
    selections = _selections(loop.SPEC, shown)
    system = loop.SPEC.dataset.system_prompt
    prompt = [*([{"role": "system", "content": system}] if system else []), {"role": "user", "content": ""}]

    def shaped(row: dict[str, Any]) -> dict[str, Any]:
        extra = {"split": row["split"], "task_index": row["task_index"], "index": row["task_index"]}
        if (row["split"], row["task_index"]) in selections:
            extra["tool_selection"] = selections[row["split"], row["task_index"]]
        return {"prompt": prompt, "agent_name": agent_name, "data_source": loop.NAME, "extra_info": extra}

    def build_dataset(
        split: str | None = None,
        *,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> Any:
        """A `datasets.Dataset` in verl's shape (write it with `.to_parquet(path)` for
        `data.train_files`): `prompt` (the chat; each trajectory appends its session's prompt
        to the user turn), `agent_name` (this env's registered agent loop), `data_source`, and
        `extra_info` (`split`, `task_index`, `index`; and `tool_selection`, the tools the task
        offers, for the tasks capture probed when some tools are task-only). Tasks come from
        the snapshot when it holds them (no network), else from the server.

        Args:
            split: The split to draw tasks from (default: `train`, else the first split).
            num_tasks: Take the first `num_tasks` tasks (default: all of them).
            indices: Take exactly these task indices instead.
            base_url: Server to fetch tasks the snapshot lacks from.
            api_key: OpenReward API key, for catalog targets.
        """
        chosen = split or loop.SPEC.default_split
        rows = rows_of(chosen, num_tasks=num_tasks, indices=indices, base_url=base_url, api_key=api_key)
        return rows.map(shaped, remove_columns=rows.column_names)

    build_dataset.__module__ = module
    build_dataset.__qualname__ = "build_dataset"
    return build_dataset


def _selections(spec: EnvSpec, shown: Mapping[str, str]) -> dict[tuple[str, int], list[str]]:
    """The tools (as the model calls them) each probed task offers, when some tools are
    task-only (`offers.offered`). A task capture did not probe is shown every tool; a call it
    does not offer is refused, unsent."""
    if not spec.offered_on:
        return {}
    found = {
        task: offers.offered(shown, task, spec.offered_on, spec.probed_tasks, lambda: None)
        for task in spec.probed_tasks
    }
    return {task: sorted(shown[wire] for wire in wires or ()) for task, wires in found.items()}
