"""One rollout against one ORS environment, addressed by tool name: the surface other trainers' shims use.

TRL drives `EnvAdapter` through its own calling convention: every public method is a tool, the
rollout starts at `reset` and is scored by `get_reward`. A trainer that finds tools some other way
(verifiers' MCP toolsets, skyrl-gym's parsed `<tool_call>` text) needs the same rollout — the
session budget and breaker, task-only tools, content parts, secrets masked, the env's reward
rule — without that convention. `Episode` is that rollout: it owns one adapter of the snapshot's
spec, so every trainer's module plays by the same rules and shares the process's budget and
breaker with the TRL module of the same env.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from . import process
from .adapter import EnvAdapter
from .spec import EnvSpec
from .types import ToolOutput

_classes: dict[int, tuple[EnvSpec, type[EnvAdapter]]] = process.per_process({})  # id(spec) → (spec, its adapter class)
_classes_lock = process.lock()


def _adapter_class(spec: EnvSpec, name: str) -> type[EnvAdapter]:
    """One adapter class per spec (kept alive with it, so its id stays its own), so the drift
    check runs once per process and env, as it does for the TRL module's class."""
    with _classes_lock:
        if id(spec) not in _classes:
            _classes[id(spec)] = (spec, type(name, (EnvAdapter,), {"__module__": __name__}, spec=spec))
        return _classes[id(spec)][1]


class Episode:
    """A rollout: `start` opens the task's session, `call` runs a tool, `reward` scores, `close` deletes.

    `name` names the env in log lines (the generated module passes its env's class name).
    Options are `EnvAdapter`'s (`base_url`, `api_key`, `secrets`, `timeout`, `reward`,
    `max_output_chars`, `image_limits`, ...). An environment failure never raises from `call`: the
    rollout ends unscored (`outcome == "env_error"`) and the model reads one line saying so.
    """

    def __init__(self, spec: EnvSpec, *, name: str = "Episode", **options: Any) -> None:
        self._adapter = _adapter_class(spec, name)(**options)

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(
        self,
        split: str = "train",
        index: int | None = None,
        task_spec: Mapping[str, Any] | None = None,
        carried: list[dict[str, Any]] | None = None,
    ) -> Any:
        """Open a session on the task and return its prompt: a `str`, or content parts when it
        holds images. Ends the previous rollout of this episode first. `carried`: the messages
        the trainer's prompt already holds with their roles (a conversation-shaped env's system
        message), which the prompt then does not repeat."""
        row: dict[str, Any] = {"split": split, "task_index": index}
        if task_spec is not None:
            row["task_spec"] = dict(task_spec)
        if carried is not None:
            row["prompt"] = carried
        return self._adapter.reset(**row)

    def call(self, name: str, arguments: Mapping[str, Any], params: type[BaseModel] | None = None) -> ToolOutput:
        """Run the tool `name` (its wire name): validated by `params` when given (a value equal to
        the schema's default is not sent), refused without a request when this task does not
        offer it, the answer recorded. Returns text, or content parts when the answer holds images."""
        return self._adapter._call_tool(name, params, dict(arguments))

    def submit_final_message(self, message: str) -> None:
        """Give the model's final plain message to the env's terminal tool, when it declares one."""
        self._adapter._submit_final_message(message)

    def reward(self) -> float | None:
        """The rollout's reward by the env's rule (or the `reward=` option), None when unscored;
        counted in the scoring coverage (`orlgen.runtime.COVERAGE`). Deletes the session: the
        rollout is over."""
        self._adapter._end_session()
        return self._adapter._score("episode", self._adapter._aggregate)

    def standing_reward(self) -> float | None:
        """The reward the env's rule gives the rollout so far, without ending it or counting it in
        the scoring coverage: for a trainer whose host reads the reward from another process
        (verifiers' tool servers), told after every call in case the rollout stops unfinished."""
        summed = self._adapter._aggregate == "summed"
        return self._adapter._summed() if summed else self._adapter.reward

    def close(self) -> None:
        """Delete the session, if one is open (idempotent)."""
        self._adapter._end_session()

    @property
    def state(self) -> EnvAdapter:
        """The rollout's state, read-only by convention: `outcome`, `finished`, `reward`,
        `rewards`, `metadata`, `error`, `tool_calls`, `tool_errors`, `last_output`."""
        return self._adapter

    @property
    def offered(self) -> frozenset[str] | None:
        """The tools this task's session offers (task-only tools included), None when unknown."""
        return self._adapter._session_tools()
