"""The base class of every generated `<Name>Env`: TRL's shim over one `Episode`.

TRL turns every public function of the adapter's *class* into a tool, so everything here that
is not `reset` or `get_reward` is private or a property (TRL lists functions, not properties).
Generated subclasses add one public method per tool, each ending in `self._call_tool(...)`.

What TRL needs that the trainer-neutral `Episode` does not do: a dataset row's keyword
arguments in (`reset(**row)`), TRL's tool result out (a `str`, content parts when the answer
holds images, `"Error: ..."` for a call that failed), `get_reward()` once per finished rollout,
the rollout's state as attributes a reward function reads (`env.reward`, `env.outcome`, ...),
and copy/pickle for TRL's async worker. Everything else — the session, its budget slot, the
drift and deployment checks, task-only tools, secrets masking, the reward rule — is the
episode's (see `orlgen.runtime.episode` for how failures are sorted).

The adapter owns its reward, as TRL's contract allows: both `GRPOTrainer` and `AsyncGRPOTrainer`
call `get_reward()` once per finished rollout and log it in a column named after the class. A
rollout is scored once: whichever scorer reads it first (`get_reward`, or one of orlgen's reward
functions such as `summed_reward`) owns it, and the others return None for it, so passing both
never counts a reward twice (see `orlgen.runtime.trl.scoring`).
"""

from __future__ import annotations

import copy
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from ..data.reward import RewardRule
from ..data.spec import EnvSpec
from ..episode import (
    DEPLOYMENT_POLICY_VAR,
    DeploymentChanged,
    DriftError,
    Episode,
    Outcome,
    check_env_overrides,
    deployment_policy,
    tool_drift,
)
from ..types import ToolOutput
from ..unset import UNSET

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "DEPLOYMENT_POLICY_VAR",
    "STATE_ATTRIBUTES",
    "UNSET",
    "DeploymentChanged",
    "DriftError",
    "EnvAdapter",
    "check_env_overrides",
    "check_reachable",
    "deployment_policy",
    "tool_drift",
    "tool_method",
]

# The public instance attributes of an adapter: no tool method may take one of these names.
STATE_ATTRIBUTES = (
    "reward",
    "rewards",
    "metadata",
    "finished",
    "last_output",
    "outcome",
    "error",
    "tool_calls",
    "tool_errors",
)

_Tool = TypeVar("_Tool", bound=Callable[..., ToolOutput])


@overload
def tool_method(method: _Tool, *, aliases: dict[str, str] | None = None) -> _Tool: ...
@overload
def tool_method(method: None = None, *, aliases: dict[str, str] | None = None) -> Callable[[_Tool], _Tool]: ...


def tool_method(method: _Tool | None = None, *, aliases: dict[str, str] | None = None) -> Any:
    """Decorates every generated tool method. A call whose arguments do not fit the signature (a
    missing required argument, an unknown one) returns an error the model can read, as a wrong
    value does, instead of raising a TypeError into TRL's tool loop. `aliases` maps a parameter's
    wire name to the Python name it had to take (`from` → `from_`): a model that calls with the
    wire name, as the server's own schema spells it, is understood too. Typed to return the
    method's own type: the signature is what TRL and a type checker read."""
    if method is None:
        return functools.partial(tool_method, aliases=aliases)
    signature = inspect.signature(method)
    renamed = dict(aliases or {})

    @functools.wraps(method)
    def checked(self: EnvAdapter, *args: Any, **kwargs: Any) -> ToolOutput:
        for wire, name in renamed.items():
            if wire in kwargs and name not in kwargs:
                kwargs[name] = kwargs.pop(wire)
        try:
            signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            return self._episode.refuse(f"invalid arguments for {checked.__name__}: {exc}").content
        return method(self, *args, **kwargs)

    return checked


class EnvAdapter:
    """One rollout at a time against one ORS environment, as TRL's `environment_factory` takes it.

    Keyword options: `Episode`'s (`base_url`, `api_key`, `secrets`, `split`, `timeout`,
    `on_drift`, `on_deployment_change`, `reward`, `prefetch`, `max_output_chars`,
    `num_generations`, `seed`, `image_limits`, `env_overrides`; see `orlgen.runtime.Episode`).
    For TRL: `prefetch` is GRPOConfig's `num_generations` on slow-setup envs (GRPOTrainer resets a
    task that many times in a row); `num_generations` and `seed` set the draw for rows that name
    no task (`train_dataset=None`); `reward` is what `get_reward()` returns.

    State read by reward functions, reset by `reset` (the episode's state, read-only):
        reward: the last non-null reward a tool returned (outcome-only), or None.
        rewards: every tool call's reward, None where it gave none.
        metadata: every tool call's metadata dict, None where it gave none.
        finished: the environment ended the episode, or failed.
        last_output: the text of the last tool result.
        outcome: `running`, `finished` (by the environment) or `env_error` (unscored).
        error: what went wrong when `outcome` is `env_error`.
        tool_calls: tool calls made this rollout; tool_errors: those the model got wrong.

    `copy.copy(adapter)` keeps that state (TRL's async worker may score a copy) but no session:
    the copy never calls, closes or reuses the original's. Pickling keeps only the options.
    """

    spec: ClassVar[EnvSpec]  # the environment as captured: set by `class XEnv(EnvAdapter, spec=SPEC)`

    def __init_subclass__(cls, spec: EnvSpec | None = None, **kwargs: Any) -> None:
        """Take the generated module's `SPEC`; a subclass of a generated class inherits it. A
        class with none is a module of contract 1 (class attributes), which this runtime cannot run."""
        super().__init_subclass__(**kwargs)
        if spec is not None:
            cls.spec = spec
        elif not hasattr(cls, "spec"):
            raise ImportError(
                f"{cls.__module__}.{cls.__qualname__} has no EnvSpec: it was generated for orlgen's runtime "
                "contract 1, which this orlgen does not speak: pip install 'orlgen<0.2' or regenerate it"
            )

    def __init__(self, **options: Any) -> None:
        self._episode = Episode(self.spec, name=type(self).__name__, owner=type(self), **options)

    def __repr__(self) -> str:
        return repr(self._episode)

    def __getstate__(self) -> dict[str, Any]:
        """Pickles as its options: a session does not cross processes."""
        return self._episode.options

    def __setstate__(self, options: dict[str, Any]) -> None:
        type(self).__init__(self, **options)

    def __copy__(self) -> EnvAdapter:
        """A new adapter with the same options and this rollout's state, and no session."""
        clone = type(self).__new__(type(self))
        clone._episode = copy.copy(self._episode)
        return clone

    def reset(self, **row: Any) -> Any:
        """Start the rollout for a dataset row: close the previous session, open one for the
        row's task and return the task's prompt (a `str`, or content parts when it holds images).

        The task is `row["task_index"]` (in `row["split"]` when present), or an ad-hoc
        `row["task_spec"]` (a dict or its JSON text) that no split holds; a row with neither
        (TRL's placeholder rows under `train_dataset=None`, a mixture's routing-only rows) plays
        the next task of a seeded walk over the split (see `orlgen.runtime.session.draw`). The row's
        `prompt` carries the messages TRL's prompt already holds, which a conversation-shaped
        env's prompt then does not repeat (TRL cannot insert a message from `reset`)."""
        start = self._episode.start(row.get("split"), row.get("task_index"), row.get("task_spec"), row.get("prompt"))
        return start.content

    def get_reward(self) -> float | None:
        """The rollout's reward for TRL (both trainers call this once per finished rollout):
        its step rewards by the env's reward rule (or the `reward=` option), None when unscored
        or when one of orlgen's reward functions already scored this rollout. The rollout is
        over, so its session is deleted here rather than at the next `reset`."""
        return self._episode.score("get_reward")

    def _call_tool(self, name: str, params_model: type[BaseModel] | None, arguments: dict[str, Any]) -> ToolOutput:
        """What every generated tool method ends in: the episode's call, as TRL's tool result."""
        return self._episode.call(name, arguments, params_model).content

    def _score(self, scorer: str, rule: RewardRule | str) -> float | None:
        """This rollout's reward as one of orlgen's reward functions (`scorer`) sees it."""
        return self._episode.score(scorer, rule)

    def _submit_final_message(self, message: str) -> None:
        """Give the model's final plain message to the env's @terminal tool (`submit_final_message`)."""
        self._episode.submit_final_message(message)

    # The rollout's state, read-only: the episode's. Properties, so TRL never lists them as tools.
    @property
    def reward(self) -> float | None:
        """The last non-null reward a tool returned, or None."""
        return self._episode.state.reward

    @property
    def rewards(self) -> list[float | None]:
        """Every tool call's reward, None where it gave none."""
        return list(self._episode.state.rewards)

    @property
    def metadata(self) -> list[dict[str, Any] | None]:
        """Every tool call's metadata dict, None where it gave none."""
        return list(self._episode.state.metadata)

    @property
    def finished(self) -> bool:
        """The environment ended the episode, or failed."""
        return self._episode.state.finished

    @property
    def last_output(self) -> str:
        """The text of the last tool result."""
        return self._episode.state.last_output

    @property
    def outcome(self) -> Outcome:
        """`running`, `finished` (by the environment) or `env_error` (unscored)."""
        return self._episode.state.outcome

    @property
    def error(self) -> str | None:
        """What went wrong when `outcome` is `env_error`."""
        return self._episode.state.error

    @property
    def tool_calls(self) -> int:
        """Tool calls made this rollout."""
        return self._episode.state.tool_calls

    @property
    def tool_errors(self) -> int:
        """Tool calls the model got wrong this rollout."""
        return self._episode.state.tool_errors


def check_reachable(adapter: EnvAdapter, timeout: float) -> None:
    """`Episode.check_reachable` of `adapter`'s episode. A module-level function, not a method:
    every public function of the class would be a tool."""
    adapter._episode.check_reachable(timeout)
