"""The base class of every generated `<Name>Env`: one ORS session per rollout, TRL's contract.

TRL turns every public function of the adapter's *class* into a tool, so everything here that
is not `reset` is private. Generated subclasses add one public method per tool, each ending in
`self._call_tool(...)`.

Failures are sorted by who caused them. The model's mistakes (bad arguments, an unknown tool,
a call after the episode ended) come back as text the model can read and the rollout goes on.
The environment's failures (server unreachable, session gone, a tool that crashed) come back as
text too, but end the rollout unscored. Nothing raises into the trainer except a programming
error.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, Literal

from .connection import Connection, Target, on_exit

Outcome = Literal["running", "finished", "env_error"]


class _Unset:
    """The default of every optional tool parameter: "not given", so nothing is sent for it."""

    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()

def tool_method(method: Callable[..., str]) -> Callable[..., str]:
    """Decorates every generated tool method: a call whose arguments do not fit the signature
    (a missing required argument, an unknown one) returns an error the model can read, as a
    wrong value does, instead of raising a TypeError into TRL's tool loop."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def checked(self: EnvAdapter, *args: Any, **kwargs: Any) -> str:
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            return self._model_error(f"invalid arguments for {checked.__name__}: {exc}")
        return method(self, *args, **kwargs)

    return checked


_live: weakref.WeakSet[EnvAdapter] = weakref.WeakSet()
on_exit(lambda: [adapter._end_session() for adapter in list(_live)])


class EnvAdapter:
    """One rollout at a time against one ORS environment.

    State read by reward functions, reset by `reset`:
        reward: the last non-null reward a tool returned (outcome-only), or None.
        rewards: every tool call's reward, None where it gave none.
        metadata: every tool call's metadata dict, None where it gave none.
        finished: the environment ended the episode, or failed.
        last_output: the text of the last tool result.
        outcome: `running`, `finished` (by the environment) or `env_error` (unscored).
        error: what went wrong when `outcome` is `env_error`.
    """

    _target: ClassVar[Target]
    _env_var: ClassVar[str]

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        secrets: dict[str, str] | None = None,
        split: str = "train",
    ) -> None:
        self._connection = Connection.resolve(self._target, self._env_var, base_url, api_key)
        self._secrets = dict(secrets) if secrets else None
        self._split = split
        self._session_slot: list[Any] = []  # the entered SDK session context, when one is open
        weakref.finalize(self, _close_slot, self._session_slot)
        _live.add(self)
        self._clear_state()

    def __repr__(self) -> str:
        where = self._connection.url or self._connection.catalog
        return f"{type(self).__name__}({where!r}, split={self._split!r}, outcome={self.outcome!r})"

    def reset(self, **row: Any) -> str:
        """Start the rollout for a dataset row: close the previous session, open one for
        `row["task_index"]` (in `row["split"]` when present) and return the task's prompt."""
        if "task_index" not in row:
            raise KeyError("reset() needs the dataset row's 'task_index' (use the module's build_dataset)")
        self._end_session()
        self._clear_state()
        split = row.get("split") or self._split
        try:
            context = self._connection.environment().session(
                split=split, index=int(row["task_index"]), secrets=self._secrets
            )
            session = context.__enter__()
            self._session_slot.append(context)
            self._session = session
            return _text(session.get_prompt())
        except Exception as exc:  # noqa: BLE001 - any SDK or transport failure is the environment's
            return self._env_failed(f"could not start task {split}[{row['task_index']}]", exc)

    def _clear_state(self) -> None:
        self._session: Any = None
        self.reward: float | None = None
        self.rewards: list[float | None] = []
        self.metadata: list[dict[str, Any] | None] = []
        self.finished = False
        self.last_output = ""
        self.outcome: Outcome = "running"
        self.error: str | None = None

    def _call_tool(self, name: str, params_model: Any, arguments: dict[str, Any]) -> str:
        """Validate the arguments with the tool's model, send only those given, record the result."""
        if self._session is None:
            return self._model_error(f"{name} was not run: the episode is over" if self.finished
                                     else f"{name} was not run: no episode is running (call reset first)")
        given = {key: value for key, value in arguments.items() if value is not UNSET}
        payload = given
        if params_model is not None:
            from pydantic import ValidationError

            try:
                payload = params_model.model_validate(given).model_dump(
                    mode="json", by_alias=True, exclude_unset=True
                )
            except ValidationError as exc:
                return self._model_error(f"invalid arguments for {name}: {_validation_text(exc)}")
        from openreward.api.errors import ToolCallError

        try:
            output = self._session.call_tool(name, payload)
        except ToolCallError as exc:
            return self._model_error(f"{name} was not run ({exc.reason}): {exc.detail}")
        except Exception as exc:  # noqa: BLE001 - transport, dead session, crashed tool
            return self._env_failed(f"{name} failed", exc)
        return self._record(output)

    def _record(self, output: Any) -> str:
        reward = None if output.reward is None else float(output.reward)
        self.rewards.append(reward)
        if reward is not None:
            self.reward = reward
        self.metadata.append(dict(output.metadata) if isinstance(output.metadata, dict) else None)
        self.last_output = _text(output.blocks) or "(no output)"
        if output.finished:
            self.finished = True
            self.outcome = "finished"
            self._end_session()
        return self.last_output

    def _model_error(self, message: str) -> str:
        self.last_output = f"Error: {message}"
        return self.last_output

    def _env_failed(self, what: str, exc: BaseException) -> str:
        """The environment failed: end the rollout, unscored, and tell the model in one line."""
        self.error = f"{what}: {type(exc).__name__}: {exc}".splitlines()[0]
        self.outcome = "env_error"
        self.finished = True
        self.reward = None
        self._end_session()
        self.last_output = f"Error: the environment failed ({self.error}); the episode is over."
        return self.last_output

    def _end_session(self) -> None:
        self._session = None
        _close_slot(self._session_slot)


def _close_slot(slot: list[Any]) -> None:
    """Delete the session on the server; best effort, as the server reaps what we miss."""
    while slot:
        context = slot.pop()
        try:
            context.__exit__(None, None, None)
        except Exception:  # noqa: BLE001
            pass


def _text(blocks: Any) -> str:
    """The text blocks of a prompt or tool output, joined; images are skipped."""
    return "\n".join(block.text for block in blocks or () if getattr(block, "type", None) == "text" and block.text)


def _validation_text(exc: Any) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
