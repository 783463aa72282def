"""The base class of every generated `<Name>Env`: one ORS session per rollout, TRL's contract.

TRL turns every public function of the adapter's *class* into a tool, so everything here that
is not `reset` is private. Generated subclasses add one public method per tool, each ending in
`self._call_tool(...)`.

Failures are sorted by who caused them. The model's mistakes (bad arguments, an unknown tool,
a call after the episode ended) come back as text the model can read and the rollout goes on.
The environment's failures (server unreachable, session gone, a tool that crashed, no answer
within `timeout`) come back as text too, but end the rollout unscored. Nothing raises into the
trainer except a programming error, tool drift under `on_drift="raise"`, or a new deployment of
the environment under `on_deployment_change="refuse"`. The first rollout of a process that an
environment leaves unscored, and its circuit breaker opening, each say so in one line per env.

The adapter owns its reward, as TRL's contract allows: both `GRPOTrainer` and `AsyncGRPOTrainer`
call `get_reward()` once per finished rollout and log it in a column named after the class. A
rollout is scored once: whichever scorer reads it first (`get_reward`, or one of orlgen's reward
functions such as `summed_reward`) owns it, and the others return None for it, so passing both
never counts a reward twice (see `orlgen.runtime.scoring`).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar, overload

from . import admission, budget, process
from . import content as _content
from . import draw as _draw
from . import offers as _offers
from . import prefetch as _prefetch
from . import secrets as _secrets
from . import wire as _wire
from .connection import Connection, install_sigterm, on_exit
from .errors import OrlgenRuntimeError, described, first_line
from .metrics import COUNTERS
from .missing_secrets import warn_missing_secrets
from .redaction import mask_secrets, public_url, redact
from .secrets import choose_api_key, secrets_from_env
from .spec import Aggregate, EnvSpec
from .types import ToolOutput

if TYPE_CHECKING:
    from pydantic import BaseModel

logger = logging.getLogger("orlgen")

Outcome = Literal["running", "finished", "env_error"]
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
DriftPolicy = Literal["warn", "raise", "ignore"]
DeploymentPolicy = Literal["warn", "refuse"]
DEPLOYMENT_POLICY_VAR = "ORLGEN_ON_DEPLOYMENT_CHANGE"  # the policy when `on_deployment_change` is not given
# What `copy.copy` carries over: the episode, never the session.
_EPISODE = (*STATE_ATTRIBUTES, "_scored_by")


class DriftError(OrlgenRuntimeError):
    """The live environment's tools differ from the snapshot the module was generated from."""


class DeploymentChanged(DriftError):
    """The live environment is another deployment than the snapshot's, and the policy refuses it.
    A `DriftError`: whatever stops a run on drift stops it on this too."""


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
            return self._model_error(f"invalid arguments for {checked.__name__}: {exc}")
        return method(self, *args, **kwargs)

    return checked


def _forget_sessions(live: weakref.WeakSet[EnvAdapter]) -> None:
    """In a forked child, the adapters it inherited keep no session: those are the parent's, which
    the child must neither call nor delete (at its exit, or when it collects an adapter). The
    adapters stay live: their next `reset` opens the child's own."""
    for adapter in list(live):
        adapter._session = None
        process.forget(adapter._session_slot)


_live: weakref.WeakSet[EnvAdapter] = process.per_process(weakref.WeakSet(), _forget_sessions)


def _end_all_sessions() -> None:
    """At exit, sessions are deleted concurrently, in the background; the SDK loop waits for
    them (bounded): the prefetched spares first, then every live adapter's."""
    for connection, session in _prefetch.drain():
        _close_slot([session], connection, wait=False)
    for adapter in list(_live):
        adapter._end_session(wait=False)


on_exit(_end_all_sessions)
_drift_checked: set[type] = process.per_process(set())
_drift_lock = process.lock()
_deployment_refused: dict[type, str] = process.per_process({})  # class → its refusal, raised at every reset
_scoring_lock = process.lock()
_split_sizes: dict[tuple[Connection, str], int] = process.per_process({})  # for rows that name no task


class EnvAdapter:
    """One rollout at a time against one ORS environment.

    Keyword options, all optional:
        base_url: the server's URL (default: `spec.env_var`, then the snapshot's target).
        api_key: OpenReward API key: authenticates requests and reaches every session as the
            `api_key` and `OPENREWARD_API_KEY` secrets (it wins over those names in `secrets`).
        secrets: per-session secrets, forwarded to the server; never logged or shown. Default:
            the environment variables named by the snapshot's secret names (`spec.secret_names`),
            read at each `reset`. A key given here as `api_key` is used when `api_key=` is not.
        split: the split used when a dataset row names none.
        timeout: seconds any one request may take (opening a session includes waiting for the
            environment's setup, for a slot of the session budget and for a busy env: see
            `orlgen.runtime.admission`); past it the rollout ends as an environment error.
        on_drift: what to do when the first session of the process lists tools that differ from
            the snapshot: "warn" (log), "raise" (DriftError from `reset`) or "ignore".
        on_deployment_change: what to do when the first session of the process finds another
            deployment of the environment than the snapshot recorded (its `/version`): "warn"
            (log one line) or "refuse" (`DeploymentChanged`, a DriftError, from that `reset` and
            from every later one of the class in the process). Default: `ORLGEN_ON_DEPLOYMENT_CHANGE`,
            else "warn".
        reward: what `get_reward()` returns: "outcome" (the last non-null step reward) or
            "summed" (the sum of the non-null step rewards), None when nothing scored the rollout.
            Default: the rule the snapshot records (`spec.reward_rule`; "outcome" unless declared).
        prefetch: for GRPOTrainer on slow-setup envs, `num_generations`: the first `reset` of a
            task opens that many sessions together for the group's next resets (see
            `orlgen.runtime.prefetch` for the cost). 0 (off) by default.
        max_output_chars: a tool output's or a prompt's text longer than this reaches the model
            cut, with a marker saying so (default: `ORLGEN_MAX_OUTPUT_CHARS`, else 100,000).
        num_generations: for rows that name no task (`train_dataset=None`), how many resets in a
            row play each drawn task: GRPOConfig's `num_generations`, so a group plays one task.
        seed: the seed of that draw (`orlgen.runtime.draw`).
        image_limits: how many images, and decoded pixels in all, one answer may bring the model
            (`orlgen.runtime.content.ImageLimits`; default: `ORLGEN_MAX_IMAGES` and
            `ORLGEN_MAX_IMAGE_PIXELS`, else 16 and 40,000,000); an image past them is a marker.
        env_overrides: values the env's own code reads instead of its defaults, sent at each
            session's opening as the SDK's `env_overrides` (keys `OPENAI_BASE_URL`,
            `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`: point an env's judge at
            your own endpoint); never logged or shown, like secrets.

    State read by reward functions, reset by `reset`:
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
    # The rollout's state (see above), set anew by `_clear_state` at every `reset`.
    reward: float | None
    rewards: list[float | None]
    metadata: list[dict[str, Any] | None]
    finished: bool
    last_output: str
    outcome: Outcome
    error: str | None
    tool_calls: int
    tool_errors: int
    _session: Any  # the open session (`ors.Session`), or None
    _task: tuple[str, int] | None  # the rollout's (split, index)
    _listed: frozenset[str] | None  # the session's tool names, once read
    _scored_by: str | None  # the scorer that owns this rollout's reward

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

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        secrets: dict[str, Any] | None = None,
        split: str = "train",
        timeout: float = 600.0,
        on_drift: DriftPolicy = "warn",
        on_deployment_change: DeploymentPolicy | None = None,
        reward: Aggregate | None = None,
        prefetch: int = 0,
        max_output_chars: int | None = None,
        num_generations: int = 1,
        seed: int = 0,
        image_limits: _content.ImageLimits | None = None,
        env_overrides: Mapping[str, str] | None = None,
    ) -> None:
        reward = self.spec.reward_rule if reward is None else reward
        if reward not in ("outcome", "summed"):
            raise ValueError(f"reward must be 'outcome' or 'summed', not {reward!r}")
        self._options = {
            "base_url": base_url,
            "api_key": api_key,
            "secrets": secrets,
            "split": split,
            "timeout": timeout,
            "on_drift": on_drift,
            "on_deployment_change": on_deployment_change,
            "reward": reward,
            "prefetch": prefetch,
            "max_output_chars": max_output_chars,
            "num_generations": num_generations,
            "seed": seed,
            "image_limits": image_limits,
            "env_overrides": env_overrides,
        }
        self._env_overrides = check_env_overrides(env_overrides)
        self._max_output_chars = _wire.max_output_chars(max_output_chars)
        self._image_limits = image_limits  # None: the variables, read at each answer
        self._aggregate: Aggregate = reward
        self._prefetch = prefetch
        self._num_generations = num_generations
        self._seed = seed
        self._given_key = choose_api_key(api_key, secrets)  # a target not trusted with it never gets it
        self._connection = Connection.resolve(self.spec.target, self.spec.env_var, base_url, self._given_key)
        self._secrets = dict(secrets) if secrets is not None else None
        self._split = split
        self._timeout = timeout
        self._on_drift = on_drift
        self._on_deployment_change = deployment_policy(on_deployment_change)
        self._session_slot: list[Any] = []  # the open session, when there is one
        self._secret_values: tuple[str, ...] = ()  # masked as *** in server text (set at each reset)
        weakref.finalize(self, _close_slot, self._session_slot, self._connection)
        _live.add(self)
        # Here, not only at the first request: TRL's async worker makes adapters on its main thread
        # but calls them on a pool, where no handler can be installed (its stop() sends SIGTERM).
        install_sigterm()
        self._clear_state()
        warn_missing_secrets(type(self), secrets, api_key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._connection!r}, split={self._split!r}, outcome={self.outcome!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickles as its options: a session does not cross processes."""
        return dict(self._options)

    def __setstate__(self, options: dict[str, Any]) -> None:
        type(self).__init__(self, **options)

    def __copy__(self) -> EnvAdapter:
        """A new adapter with the same options and this rollout's state, and no session."""
        clone = type(self).__new__(type(self))
        clone.__setstate__(self._options)
        for name in _EPISODE:
            value = getattr(self, name)
            setattr(clone, name, list(value) if isinstance(value, list) else value)
        return clone

    def get_reward(self) -> float | None:
        """The rollout's reward for TRL (both trainers call this once per finished rollout):
        the outcome (or the sum, with `reward="summed"`) of the step rewards, None when unscored
        or when one of orlgen's reward functions already scored this rollout. The rollout is
        over, so its session is deleted here rather than at the next `reset`."""
        self._end_session()
        return self._score("get_reward", self._aggregate)

    def _score(self, scorer: str, aggregate: Aggregate) -> float | None:
        """This rollout's reward as `scorer` sees it: the first scorer to ask owns the rollout
        (and counts it in the scoring coverage); any other scorer gets None."""
        from .scoring import COVERAGE

        with _scoring_lock:
            if self._scored_by is None:
                self._scored_by = scorer
                COVERAGE.add([self])
            elif self._scored_by != scorer:
                return None
        return self._summed() if aggregate == "summed" else self.reward

    def _summed(self) -> float | None:
        """The sum of the rollout's non-null step rewards; None when there are none or the
        environment failed (an env error is unscored, whatever it returned before)."""
        steps = [reward for reward in self.rewards if reward is not None]
        return None if not steps or self.outcome == "env_error" else sum(steps)

    def _submit_final_message(self, message: str) -> None:
        """Give the model's final plain message to the env's @terminal tool, which grades it, and
        end the rollout. Only for a running episode of an env that declares one."""
        if self.spec.terminal_tool is None or self._session is None or self.finished:
            return
        from .ors import ToolRefused

        session = self._session
        try:
            output = self._connection.run(lambda env: session.call_terminal_tool(message), self._timeout)
        except ToolRefused as exc:
            self._env_failed(f"terminal tool {self.spec.terminal_tool} was not run ({exc.reason})", exc)
            return
        except Exception as exc:  # transport, dead session, crashed tool, timeout
            self._env_failed(f"terminal tool {self.spec.terminal_tool} failed", exc)
            return
        self._record(self.spec.terminal_tool, output)
        if self.outcome == "env_error":
            return  # the answer was malformed: the rollout ended there
        self.finished, self.outcome = True, "finished"  # the terminal tool ends the rollout
        self._end_session()

    def reset(self, **row: Any) -> Any:
        """Start the rollout for a dataset row: close the previous session, open one for the
        row's task and return the task's prompt (a `str`, or content parts when it holds images).

        The task is `row["task_index"]` (in `row["split"]` when present), or an ad-hoc
        `row["task_spec"]` (a dict or its JSON text) that no split holds; a row with neither
        (TRL's placeholder rows under `train_dataset=None`, a mixture's routing-only rows) plays
        the next task of a seeded walk over the split (see `orlgen.runtime.draw`)."""
        self._end_session()
        self._clear_state()
        if (refusal := _deployment_refused.get(type(self))) is not None:  # nothing is asked of that deployment
            raise DeploymentChanged(refusal)
        split = row.get("split") or self._split
        secrets = self._secrets if self._secrets is not None else secrets_from_env(self.spec.secret_names)
        self._secret_values = _secret_values(secrets, self._connection.api_key) + _override_keys(self._env_overrides)
        if not self._connection.trusted:  # the snapshot's own remote target: see `Connection.resolve`
            how = f"base_url= or {self.spec.env_var}"
            secrets = _secrets.for_unnamed_target(secrets, self.spec.target.value, self._given_key, how)
        spec = _task_spec(row.get("task_spec"))
        index = None if spec is not None or row.get("task_index") is None else int(row["task_index"])
        label = "(task_spec)" if spec is not None else f"{split}[{'?' if index is None else index}]"
        try:
            if spec is None and index is None:
                index = self._draw(split)
                label = f"{split}[{index}]"
            self._task = None if index is None else (split, index)  # an ad-hoc task offers what it offers
            session = self._open_session(split, index, secrets, spec)
            self._session_slot.append(session)
            self._session = session
            prompt = self._bounded(self._masked(self._prompt(session, row.get("prompt"))))
            self._check_drift(session)
            return prompt
        except (DriftError, budget.BudgetError):  # the run's setup is wrong: not the env's failure
            raise
        except _wire.WireError as exc:
            return self._wire_failed(f"the prompt of task {label}", exc)
        except Exception as exc:  # any transport or server failure is the environment's
            return self._env_failed(f"could not start task {label}", exc)

    def _draw(self, split: str) -> int:
        """The task a row without one plays: the split's size is asked once per process."""
        key = (self._connection, split)
        if key not in _split_sizes:
            _split_sizes[key] = int(self._connection.run(lambda env: env.num_tasks(split), self._timeout))
        owner = f"{type(self).__module__}.{type(self).__qualname__}"
        return _draw.next_task(owner, split, _split_sizes[key], seed=self._seed, repeats=self._num_generations)

    def _prompt(self, session: Any, carried: Any) -> Any:
        """The task's prompt as TRL appends it to the row's last user turn. A conversation-shaped
        environment is read as messages: those the row's `prompt` already carries with their
        roles are not repeated, the rest keep their roles as labelled text (TRL cannot insert a
        message from `reset`)."""
        if self.spec.conversation:
            messages = self._connection.run(lambda env: session.get_messages(), self._timeout)
            return _content.conversation(messages, carried, limits=self._image_limits)
        blocks = _wire.blocks(self._connection.run(lambda env: session.get_prompt(), self._timeout))
        return _content.render(blocks, limits=self._image_limits)

    def _open_session(self, split: str, index: int | None, secrets: Mapping[str, Any] | None, spec: Any = None) -> Any:
        """A new session for the task, within the env's budget and breaker (`admission`);
        with `prefetch`, one of the group opened together (never for an ad-hoc task)."""
        opening = _Opening(secrets, self.spec.toolset, self._env_overrides)
        opener = lambda env: _open(env, split, index, opening, spec)  # noqa: E731
        if self._prefetch < 2 or spec is not None:
            return admission.open_sessions(self._connection, type(self), self._timeout, opener)[0]
        key = (self._connection, split, index, repr(sorted((secrets or {}).items())), opening.overrides_key)
        for session in _prefetch.stale(self._connection, key):  # the previous group is over
            _close_slot([session], self._connection, wait=False)
        _prefetch.counted(key)
        session = _prefetch.take(key)
        if session is None:
            width = _prefetch.width(self._connection, self._prefetch)
            session, *spare = admission.open_sessions(self._connection, type(self), self._timeout, opener, width)
            _prefetch.keep(key, spare)
        return session

    def _clear_state(self) -> None:
        self._session = None
        self._task = None
        self._listed = None
        self.reward = None
        self.rewards = []
        self.metadata = []
        self.finished = False
        self.last_output = ""
        self.outcome = "running"
        self.error = None
        self.tool_calls = 0
        self.tool_errors = 0
        self._scored_by = None

    def _call_tool(self, name: str, params_model: type[BaseModel] | None, arguments: dict[str, Any]) -> ToolOutput:
        """Validate the arguments with the tool's model, send only those given, record the result.

        Returns a `str`, or content parts when the output holds images (`orlgen.runtime.content`)."""
        self.tool_calls += 1
        if self._session is None:
            return self._model_error(
                f"{name} was not run: the episode is over"
                if self.finished
                else f"{name} was not run: no episode is running (call reset first)"
            )
        refused = _offers.refusal(name, self._task, self.spec.offered_on, self.spec.probed_tasks, self._session_tools)
        if refused is not None:
            return self._model_error(refused)  # a task-only tool this task does not offer: nothing is sent
        given = {key: value for key, value in arguments.items() if value is not UNSET}
        payload = given
        if params_model is not None:
            from pydantic import ValidationError

            try:
                # A value equal to the schema's default is not sent: the server applies its own default.
                model = params_model.model_validate(given)
                payload = model.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_defaults=True)
            except ValidationError as exc:
                return self._model_error(f"invalid arguments for {name}: {_validation_text(exc)}")
        refusal = admission.call_refusal(self._connection)
        if refusal is not None:  # the env was found dead by another rollout: nothing is sent
            return self._env_failed(f"{name} was not run", admission.CircuitOpen(refusal))
        from .ors import ToolRefused

        session = self._session
        started = time.monotonic()
        try:
            output = self._connection.run(lambda env: session.call_tool(name, payload), self._timeout)
        except ToolRefused as exc:
            detail = _wire.cut(str(exc.detail), self._max_output_chars)  # server text, for the model: bounded too
            return self._model_error(f"{name} was not run ({exc.reason}): {self._masked(detail)}")
        except Exception as exc:  # transport, dead session, crashed tool, timeout
            return self._env_failed(f"{name} failed", exc)
        finally:
            COUNTERS.tool_call(name, time.monotonic() - started)
        return self._record(name, output)

    def _session_tools(self) -> frozenset[str] | None:
        """The session's tool names, read once per rollout (None when they cannot be read)."""
        if self._listed is None and self._session is not None:
            session = self._session
            try:
                listed = self._connection.run(lambda env: session.list_tools(), self._timeout)
                self._listed = frozenset(spec.name for spec in listed)
            except Exception:  # the call itself will meet the same failure, and report it
                return None
        return self._listed

    def _record(self, name: str, output: Any) -> ToolOutput:
        """Record a tool's answer and return it for the model: text, or content parts when it
        holds images (`content`). An answer holding a value the protocol does not allow ends the
        rollout as an environment error instead."""
        try:
            step = _wire.tool_output(output)
        except _wire.WireError as exc:
            return self._wire_failed(f"tool {name}", exc)
        self.rewards.append(step.reward)
        if step.reward is not None:
            self.reward = step.reward
        self.metadata.append(step.metadata)
        result = self._bounded(self._masked(_content.render(step.blocks, limits=self._image_limits)))
        self.last_output = _content.as_text(result) or "(no output)"
        if step.finished:
            self.finished = True
            self.outcome = "finished"
            self._end_session()
        return result if isinstance(result, list) else self.last_output

    def _bounded(self, content: str | list[dict[str, Any]]) -> ToolOutput:
        """Server text for the model cut to `max_output_chars` (each text part of content parts):
        a tool output, and a prompt, which a server can make as large as one."""
        bound = self._max_output_chars
        return _wire.cut(content, bound) if isinstance(content, str) else _cut_parts(content, bound)

    def _model_error(self, message: str) -> str:
        """A call the model got wrong: it never reached the server, and the rollout goes on."""
        self.tool_errors += 1
        self.last_output = f"Error: {message}"
        return self.last_output

    def _env_failed(self, what: str, exc: BaseException) -> str:
        """The environment failed: end the rollout, unscored, and tell the model in one line. The
        first such rollout of the process says so in the log too: without it a run against a dead
        env trains on error text, every reward None, and only TRL's "All reward functions
        returned None" hints at it."""
        text = self._end_unscored(what, exc)
        self._say_once(
            "unscored",
            f"a rollout ended unscored because the environment failed ({self.error}); every rollout it "
            "fails ends so, with reward None: said once per process, `env.error` holds each cause",
        )
        return text

    def _wire_failed(self, what: str, exc: _wire.WireError) -> str:
        """The server answered with a value the protocol does not allow: an environment error,
        logged once with the env, what answered and the value."""
        text = self._end_unscored(f"{what} answered badly", exc)
        logger.warning("%s: %s", type(self).__name__, self.error)
        return text

    def _end_unscored(self, what: str, exc: BaseException) -> str:
        """End the rollout as an environment error (counted by the env's breaker) and return the
        line the model reads; the breaker's opening is said once per process and env."""
        self.error = first_line(redact(f"{what}: {described(exc)}", self._secret_values))
        opened = admission.env_failed(self._connection, exc)
        if opened is not None:
            self._say_once("breaker", opened)
        self.outcome = "env_error"
        self.finished = True
        self.reward = None
        self._end_session(wait=False)  # the server may be gone: do not wait for it again
        self.last_output = f"Error: the environment failed ({self.error}); the episode is over."
        return self.last_output

    def _say_once(self, what: str, line: str) -> None:
        """One warning line per process, env and `what`, naming the env: the adapter class and
        the address without credentials (server text in `line` masked as `env.error` is)."""
        connection = self._connection
        address = public_url(connection.url) if connection.url else f"catalog {connection.catalog}"
        said = f"{type(self).__name__}: the environment {connection.env!r} at {address}: {redact(line, self._secret_values)}"
        _content.log_once(f"{what} {admission.env_key(connection)}", said)

    def _masked(self, result: Any) -> Any:
        """Server text for the model with the session's secret values replaced by `***`: a
        string, or the text of content parts (images pass as they are)."""
        if not self._secret_values:
            return result
        if isinstance(result, str):
            return mask_secrets(result, self._secret_values)
        if isinstance(result, list):
            return [
                (
                    {**part, "text": mask_secrets(part["text"], self._secret_values)}
                    if isinstance(part, dict) and isinstance(part.get("text"), str)
                    else part
                )
                for part in result
            ]
        return result

    def _end_session(self, wait: bool = True) -> None:
        self._session = None
        _close_slot(self._session_slot, self._connection, wait=wait)

    def _check_drift(self, session: Any) -> None:
        """Once per process and class: compare the session's tools, then the env's deployment,
        with the snapshot's. A pinned deployment ("refuse") is checked even when drift is ignored."""
        cls = type(self)
        with _drift_lock:
            if cls in _drift_checked or (self._on_drift == "ignore" and self._on_deployment_change == "warn"):
                return
            _drift_checked.add(cls)
        problems = [] if self._on_drift == "ignore" else self._tool_drift(session)
        if problems:
            message = (
                f"{cls.__name__}: the live environment's tools differ from the snapshot ({'; '.join(problems)}); "
                "run `orlgen snapshot` and review `orlgen diff`"
            )
            if self._on_drift == "raise":
                raise DriftError(message)
            logger.warning(message)
        self._check_deployment(drifted=bool(problems))

    def _tool_drift(self, session: Any) -> list[str]:
        live = self._connection.run(lambda env: session.list_tools(), self._timeout)
        return tool_drift(type(self).spec.tool_fingerprints, {spec.name: spec for spec in live})

    def _check_deployment(self, drifted: bool) -> None:
        """Compare the env's /version with the capture's: under "warn", log "same schema, new
        deployment" (unless the tools `drifted`: that line already said to snapshot again); under
        "refuse", raise `DeploymentChanged` now and at every later `reset` of the class."""
        cls = type(self)
        if cls.spec.deployment is None or (drifted and self._on_deployment_change == "warn"):
            return
        from . import provenance

        try:
            now = self._connection.run(provenance.live, self._timeout)
        except Exception:  # best effort: an unreadable /version is no evidence of a new deployment
            return
        change = provenance.changed(cls.spec.deployment, now)
        if change is None:
            return
        if self._on_deployment_change == "refuse":
            _deployment_refused[cls] = (
                f"{cls.__name__}: the environment's deployment changed since the snapshot ({change}) and "
                f"on_deployment_change (or {DEPLOYMENT_POLICY_VAR}) is 'refuse': no rollout of this class runs "
                "in this process; review the new deployment and record it with `orlgen snapshot`"
            )
            raise DeploymentChanged(_deployment_refused[cls])
        logger.warning(
            f"{cls.__name__}: same schema, new deployment of the environment ({change}); "
            "the tools match the snapshot: `orlgen snapshot` records the new deployment"
        )


def deployment_policy(given: str | None) -> DeploymentPolicy:
    """`given`, else `ORLGEN_ON_DEPLOYMENT_CHANGE`, else "warn"; a ValueError naming where a
    wrong value came from."""
    raw = given if given is not None else os.environ.get(DEPLOYMENT_POLICY_VAR) or "warn"
    if raw not in ("warn", "refuse"):
        source = "on_deployment_change" if given is not None else DEPLOYMENT_POLICY_VAR
        raise ValueError(f"{source}={raw!r} is not 'warn' or 'refuse'")
    return "refuse" if raw == "refuse" else "warn"


def check_reachable(adapter: EnvAdapter, timeout: float) -> None:
    """List the splits of the environment `adapter` talks to, once, so a caller that plays many
    rollouts (`orlgen eval`) can stop at one clear line instead of recording each as an env error.
    A module-level function, not a method: every public function of the class would be a tool.
    Raises `ConnectionError` naming the (redacted) address and the first line of the cause."""
    connection = adapter._connection
    try:
        connection.run(lambda env: env.list_splits(), timeout)
    except Exception as exc:
        reason = described(exc)
        raise ConnectionError(f"{connection!r} cannot be reached: {reason}") from exc


def tool_drift(expected: Mapping[str, tuple[bool, str]], live: dict[str, Any]) -> list[str]:
    """What differs between the snapshot's tools and a live session's tool list."""
    from .fingerprint import fingerprint

    problems = []
    for name, (shared, print_) in sorted(expected.items()):
        if name not in live:
            if shared:
                problems.append(f"{name!r} is gone")
        elif fingerprint(live[name].description, live[name].input_schema) != print_:
            problems.append(f"{name!r} changed")
    problems += [f"{name!r} is new" for name in sorted(set(live) - set(expected))]
    return problems


ENV_OVERRIDE_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")  # the SDK's


def check_env_overrides(overrides: Mapping[str, str] | None) -> dict[str, str] | None:
    """`env_overrides` as sent, or a ValueError naming the first key the SDK does not take (its
    value never shown)."""
    if not overrides:
        return None
    for key, value in overrides.items():
        if key not in ENV_OVERRIDE_KEYS:
            raise ValueError(f"env_overrides: {key!r} is not one of {', '.join(ENV_OVERRIDE_KEYS)}")
        if not isinstance(value, str):
            raise ValueError(f"env_overrides: the value of {key} is not a string")
    return dict(overrides)


def _override_keys(overrides: Mapping[str, str] | None) -> tuple[str, ...]:
    """The API keys among `env_overrides`' values, masked in server text like secrets."""
    return tuple(value for key, value in (overrides or {}).items() if key.endswith("_API_KEY") and value)


@dataclass(frozen=True)
class _Opening:
    """What a new session is opened with beside its task."""

    secrets: Mapping[str, Any] | None
    toolset: str | None
    env_overrides: Mapping[str, str] | None

    @property
    def overrides_key(self) -> str:
        """Part of the prefetch key: sessions opened with other overrides are not shared."""
        return repr(sorted((self.env_overrides or {}).items()))


async def _open(client: Any, split: str, index: int | None, opening: _Opening, spec: Any = None) -> Any:
    """A session on the task; an ad-hoc task (`spec`) is created from its spec, not a split and index."""
    options = {"secrets": opening.secrets, "toolset": opening.toolset, "env_overrides": opening.env_overrides}
    if spec is None:
        return await client.open_session(split=split, index=index, **options)
    return await client.open_session(task_spec=spec, **options)


def _secret_values(secrets: Mapping[str, Any] | None, api_key: str | None) -> tuple[str, ...]:
    """The values to mask in server text: every secret's (a `(value, domains)` pair's value too)
    and the API key."""
    values = [entry[0] if isinstance(entry, tuple) else entry for entry in (secrets or {}).values()]
    return tuple(value for value in (*values, api_key) if isinstance(value, str) and value)


def _cut_parts(parts: list[dict[str, Any]], max_chars: int) -> list[dict[str, Any]]:
    """Content parts with each text part bounded like a text-only output (images pass as they are)."""
    return [{**part, "text": _wire.cut(part["text"], max_chars)} if part["type"] == "text" else part for part in parts]


def _task_spec(value: Any) -> dict[str, Any] | None:
    """A row's `task_spec`: a dict, or its JSON text (an Arrow column of varying shapes)."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    raise ValueError(f"a row's task_spec must be a JSON object, not {type(value).__name__}")


def _close_slot(slot: list[Any], connection: Connection, wait: bool = True) -> None:
    """Delete the session on the server: waited for (bounded) normally; started in the
    background after a failure, or from the SDK's own thread (a finalizer may run there).
    Best effort: the server reaps what we miss after 15 idle minutes."""
    while slot:
        session = slot.pop()
        close = lambda env, s=session: _deleted(s)  # noqa: E731
        if not wait or threading.current_thread().name == "orlgen-sdk":
            connection.run_nowait(close)
            continue
        try:
            connection.run(close, timeout=10.0)
        except Exception:
            pass


async def _deleted(session: Any) -> None:
    """Delete the session, then give its budget slot back (once the server no longer counts it)."""
    try:
        await session.close()
    finally:
        budget.release(session)


def _validation_text(exc: Any) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
