"""The skyrl-gym 0.4 shim: what every generated `<name>_skyrl.py` module shares.

skyrl-gym has no tool-schema channel: an environment is a `BaseTextEnv` that reads the model's
text (`step(text)`) and answers with chat messages. So a generated module carries, checked in,
the system prompt that shows the model the tools (the JSON schemas TRL's chat template would show
for the TRL module's methods, in the Hermes/Qwen `<tools>` layout) and a table from each tool's
shown name to its wire name and params model. This module parses the model's
`<tool_call>{"name": ..., "arguments": ...}</tool_call>` blocks, refuses a call it can tell is
wrong before anything is sent (an unknown tool or argument, arguments the params model rejects),
and plays the rest through `Episode`: the same session budget, breaker, task-only tools, secrets
masking and reward rule as the TRL module of the same environment.

Only a generated `_skyrl` module imports this, so importing the TRL module never imports
`skyrl_gym`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from skyrl_gym.envs.base_text_env import BaseTextEnv  # type: ignore[import-not-found]

from . import surface
from .data.spec import EnvSpec
from .episode import Episode
from .hermes import (
    MAX_TOOL_CALLS_PER_TURN,
    BadCall,
    Call,
    ImageMode,
    Tool,
    content_parts,
    joined,
    parse_tool_calls,
    tool_response,
)
from .ors.blocks import quoted
from .session.metrics import since_last_rollout

__all__ = ["OrsTextEnv", "Tool", "dataset_builder"]

DEFAULT_MAX_TURNS = 10  # when a row's extras name none (SkyRL's generator always sets `max_turns`)


class OrsTextEnv(BaseTextEnv):  # type: ignore[misc]  # skyrl_gym ships no type information
    """One ORS session per episode, as skyrl-gym's `BaseTextEnv` (what `skyrl_gym.make` builds
    for each rollout: `Env(env_config=..., extras=<the row's extras>)`).

    A generated subclass sets the class attributes: `ors_spec` (the module's `SPEC`), `tools`
    (shown name → `Tool`), `system_prompt` (the tools as the model reads them), `env_id` (the
    id rows carry as `env_class`) and `env_system_prompt` (a conversation-shaped env's own system
    message, if any). (`spec` itself is skyrl_gym's: `make` sets it on every instance.)

    `env_config` (SkyRL's `environment.skyrl_gym.<env_class>` config) holds `Episode` options
    (`base_url`, `api_key`, `secrets`, `timeout`, `reward`, ...) and `images`: "markers" (the
    default: an image is a line of text, for text-only chat templates) or "parts" (OpenAI
    `image_url` parts, for SkyRL's VLM generator), and `max_tool_calls`, the calls one turn may
    run (default `MAX_TOOL_CALLS_PER_TURN`, 64, as `orlgen eval`). `extras` (the row's columns)
    give `split`, `task_index` and `max_turns` (default 10).

    Rewards: 0.0 on every step but the last, which carries the whole rollout's reward by the
    env's rule (`Episode.score`; 0.0 when unscored): SkyRL adds a rollout's step rewards up, so
    this gives the rule's value whether it is the outcome or the sum.
    """

    ors_spec: ClassVar[EnvSpec]
    tools: ClassVar[Mapping[str, Tool]]
    system_prompt: ClassVar[str]
    env_id: ClassVar[str]
    env_system_prompt: ClassVar[str | None] = None

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        options = dict(env_config or {})
        self.images: ImageMode = options.pop("images", "markers")
        if self.images not in ("markers", "parts"):
            raise ValueError(f"images must be 'markers' or 'parts', not {self.images!r}")
        self.max_tool_calls = int(options.pop("max_tool_calls", MAX_TOOL_CALLS_PER_TURN))
        if self.max_tool_calls < 1:
            raise ValueError(f"max_tool_calls must be at least 1, not {self.max_tool_calls}")
        extras = dict(extras or {})
        self.max_turns = int(extras.get("max_turns") or DEFAULT_MAX_TURNS)
        self.split: str = extras.get("split") or self.ors_spec.default_split
        index = extras.get("task_index")
        self.task_index: int | None = None if index is None else int(index)
        self.reward: float | None = None  # the rollout's reward once it is over (None: unscored)
        self.episode = Episode(self.ors_spec, name=type(self).__name__, owner=type(self), **options)

    def init(self, prompt: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Open the task's session and return the chat: the row's messages (the system prompt
        showing the tools) with the task's prompt as the user's turn."""
        messages = json.loads(prompt) if isinstance(prompt, str) else [dict(message) for message in prompt or ()]
        carried = [{"role": "system", "content": self.env_system_prompt}] if self.env_system_prompt else None
        task = self.episode.start(self.split, self.task_index, carried=carried).content
        content = content_parts(task, self.images)
        return [*messages, {"role": "user", "content": joined(content)}], {}

    def step(self, action: str) -> dict[str, Any]:
        """Run the tool calls of the model's turn, in order, until one ends the episode; a turn
        with no call is the model's final answer (given to the env's terminal tool, if any).
        Past `max_tool_calls` the calls are not run: they count as the model's failed calls and
        one answer after the others says how many there were."""
        self.turns += 1
        calls = parse_tool_calls(action)
        results: list[str | list[dict[str, Any]]] = []
        if not calls:
            self.episode.submit_final_message(action)
        for call in calls[: self.max_tool_calls]:
            if self.episode.state.finished:
                break
            results.append(self._run(call))
        skipped = len(calls) - self.max_tool_calls
        if skipped > 0 and not self.episode.state.finished:
            results.append(
                self._refuse(
                    f"{skipped} more tool calls in this turn were not run (at most {self.max_tool_calls} per turn)",
                    count=skipped,
                )
            )
        done = not calls or self.episode.state.finished or self.turns >= self.max_turns
        reward = 0.0
        if done:
            self.reward = self.episode.score()
            reward = 0.0 if self.reward is None else float(self.reward)
        observations = [tool_response(results, self.images)] if results else []  # SkyRL drops the last one itself
        return {
            "observations": observations,
            "reward": reward,
            "done": done,
            "metadata": {"outcome": self.episode.state.outcome, "tool_calls": len(results)},
            "postprocessed_action": None,
        }

    def _run(self, call: Call | BadCall) -> str | list[dict[str, Any]]:
        """One call's answer: refused here with one line when it can be told wrong without the
        server, else the Episode's (which validates with the params model before sending)."""
        if isinstance(call, BadCall):
            return self._refuse(call.problem)
        tool = self.tools.get(call.name)
        if tool is None:
            return self._refuse(f"unknown tool {quoted(call.name)} (the tools are: {', '.join(sorted(self.tools))})")
        arguments = tool.wire_arguments(call.arguments)
        if isinstance(arguments, str):
            return self._refuse(f"invalid arguments for {call.name}: {arguments}")
        return self.episode.call(tool.wire, arguments, tool.params).content

    def _refuse(self, problem: str, count: int = 1) -> str:
        """The answer to `count` calls refused here, before the Episode's `call` (counted by it as
        the model's failed calls)."""
        return self.episode.refuse(problem, count).text

    def get_metrics(self) -> dict[str, Any]:
        """Per episode (SkyRL averages them over a batch): turns, tool calls and the calls the
        model got wrong, whether the rollout was scored (averaged: the scoring coverage), whether
        the environment failed or the episode never finished, the reward (absent when unscored),
        and the runtime's counters (`orlgen.runtime.session.metrics.since_last_rollout`: sessions
        opened, capacity waits and their seconds, breaker rejections, images refused; per rollout
        once averaged)."""
        state = self.episode.state
        metrics: dict[str, Any] = {
            "turns": self.turns,
            "tool_calls": state.tool_calls,
            "tool_errors": state.tool_errors,
            "scored": float(self.reward is not None),
            "env_error": float(state.outcome == "env_error"),
            "unfinished": float(state.outcome == "running"),
            **since_last_rollout(),
        }
        if self.reward is not None:
            metrics["reward"] = self.reward
        return metrics

    def close(self) -> None:
        """Delete the session if the episode still holds one (idempotent, as skyrl_gym asks)."""
        self.episode.close()

    @classmethod
    def register(cls) -> None:
        """Register this class with skyrl_gym under `env_id` (the rows' `env_class`), by its
        import path, so SkyRL's workers import it themselves; once per process."""
        import skyrl_gym  # type: ignore[import-not-found]

        if cls.env_id not in skyrl_gym.envs.registration.registry:
            skyrl_gym.register(id=cls.env_id, entry_point=f"{cls.__module__}:{cls.__qualname__}")


def dataset_builder(env: type[OrsTextEnv], module: str) -> Callable[..., Any]:
    """The `build_dataset` of the generated module named `module`: the TRL module's rows
    (`orlgen.runtime.surface.dataset_builder`: the same tasks and columns, from the snapshot)
    in SkyRL's dataset shape."""
    rows_of = surface.dataset_builder(env.ors_spec, module)

    def build_dataset(
        split: str | None = None,
        *,
        num_tasks: int | None = None,
        indices: Sequence[int] | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> Any:
        """A `datasets.Dataset` in SkyRL's shape (write it with `.to_parquet(path)`): `prompt`
        (the system message showing the tools), `env_class` (the id `register()` registers),
        and the extras SkyRL hands the env: `split`, `task_index` and one column per task-spec
        field. Tasks come from the snapshot when it holds them (no network), else from the server.

        Args:
            split: The split to draw tasks from (default: `train`, else the first split).
            num_tasks: Take the first `num_tasks` tasks (default: all of them).
            indices: Take exactly these task indices instead.
            base_url: Server to fetch tasks the snapshot lacks from.
            api_key: OpenReward API key, for catalog targets.
        """
        chosen = split or env.ors_spec.default_split
        rows = rows_of(chosen, num_tasks=num_tasks, indices=indices, base_url=base_url, api_key=api_key)
        extras = rows.remove_columns("prompt")
        system = [{"role": "system", "content": env.system_prompt}]
        shaped = extras.add_column("prompt", [system] * len(extras)).add_column("env_class", [env.env_id] * len(extras))
        return shaped.select_columns(["prompt", "env_class", *extras.column_names])

    build_dataset.__module__ = module
    build_dataset.__qualname__ = "build_dataset"
    return build_dataset
