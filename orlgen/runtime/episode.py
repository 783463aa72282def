"""One rollout against one ORS environment: the trainer-neutral core every trainer's shim sits on.

An `Episode` owns what a rollout needs whichever trainer drives it: the connection, the session
(opened through `admission`, which holds its budget slot), the drift and deployment checks, the
task draw, the step log and the env's reward rule. Its methods return values — a `Step` per
start or call, an `EpisodeState` snapshot — and never a trainer's shape: TRL's `EnvAdapter`
renders a `Step` as TRL's tool result, skyrl's `OrsTextEnv` as a `<tool_response>`, verifiers'
toolset as MCP content. None of those shims is imported here.

Failures are sorted by who caused them, and a `Step` says which as data (`Step.failure`). The
model's mistakes (bad arguments, an unknown or unoffered tool, a call after the episode ended)
never reach the server and the rollout goes on. The environment's failures (server unreachable,
session gone, a tool that crashed, no answer within `timeout`) end the rollout unscored. Nothing
raises into a trainer except a programming error, tool drift under `on_drift="raise"`, or a new
deployment under `on_deployment_change="refuse"`. The first rollout of a process that an env
leaves unscored, and its circuit breaker opening, each say so in one line per env.

A rollout is scored once: whichever scorer reads it first (`score(scorer)`) owns it and counts it
in the scoring coverage; the others get None, so a trainer that passes two scorers never counts a
reward twice (see `orlgen.runtime.trl.scoring`).
"""

from __future__ import annotations

import json
import logging
import os
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from . import content as _content
from . import offers as _offers
from . import process
from .coverage import COVERAGE
from .data.reward import RewardRule
from .data.spec import EnvSpec
from .errors import OrlgenRuntimeError, described, first_line
from .log import log_once
from .ors import blocks as _wire
from .ors import secrets as _secrets
from .ors.errors import ToolRefused
from .ors.secrets import choose_api_key, secrets_from_env
from .redaction import mask_secrets, redact
from .session import admission, budget
from .session import draw as _draw
from .session import prefetch as _prefetch
from .session.connection import Connection, install_sigterm, on_exit
from .session.metrics import COUNTERS
from .session.missing_secrets import warn_missing_secrets
from .types import ToolOutput

if TYPE_CHECKING:
    from pydantic import BaseModel

logger = logging.getLogger("orlgen")

Outcome = Literal["running", "finished", "env_error"]
DriftPolicy = Literal["warn", "raise", "ignore"]
DeploymentPolicy = Literal["warn", "refuse"]
DEPLOYMENT_POLICY_VAR = "ORLGEN_ON_DEPLOYMENT_CHANGE"  # the policy when `on_deployment_change` is not given


class DriftError(OrlgenRuntimeError):
    """The live environment's tools differ from the snapshot the module was generated from."""


class DeploymentChanged(DriftError):
    """The live environment is another deployment than the snapshot's, and the policy refuses it.
    A `DriftError`: whatever stops a run on drift stops it on this too."""


@dataclass(frozen=True)
class Failure:
    """Why a start or a call gave the model no answer of the env's: `kind` says whose fault it
    was ("model": nothing was sent and the rollout goes on; "env": the rollout ended unscored)."""

    kind: Literal["model", "env"]
    message: str  # one line, secrets masked


@dataclass(frozen=True)
class Step:
    """What a start (the task's prompt) or a tool call gave.

    `content` is what the model reads, in the runtime's neutral shape: a `str` when it is all
    text, else content parts (`{"type": "text", "text": ...}` and `{"type": "image", "image":
    <PIL.Image.Image>}`), secrets masked, text bounded, images within the answer's limits; for a
    failure, the line that says so (`Error: ...`). `reward`, `finished` and `metadata` are the
    env's for this step."""

    content: ToolOutput
    reward: float | None = None
    finished: bool = False
    metadata: dict[str, Any] | None = None
    failure: Failure | None = None

    @property
    def text(self) -> str:
        """The content as the text a person reads (images as markers)."""
        return _content.as_text(self.content)


@dataclass(frozen=True)
class EpisodeState:
    """The rollout so far, as a value (a shim's metrics and a reward function read it).

    outcome: `running`, `finished` (by the environment) or `env_error` (unscored).
    finished: the environment ended the episode, or failed. reward: the last non-null step reward.
    rewards, metadata: every call's reward and metadata dict, None where it gave none.
    error: what went wrong when `outcome` is `env_error`. last_output: the text of the last answer.
    tool_calls: calls the model made; tool_errors: those it got wrong (nothing was sent)."""

    outcome: Outcome = "running"
    finished: bool = False
    reward: float | None = None
    rewards: tuple[float | None, ...] = ()
    metadata: tuple[dict[str, Any] | None, ...] = ()
    error: str | None = None
    last_output: str = ""
    tool_calls: int = 0
    tool_errors: int = 0


@dataclass
class _Log:
    """The mutable record behind `EpisodeState`, one per rollout."""

    outcome: Outcome = "running"
    finished: bool = False
    reward: float | None = None
    rewards: list[float | None] = field(default_factory=list)
    metadata: list[dict[str, Any] | None] = field(default_factory=list)
    error: str | None = None
    last_output: str = ""
    tool_calls: int = 0
    tool_errors: int = 0
    opened: bool = False  # a session was opened: a rollout that then stops unfinished ran

    def frozen(self) -> EpisodeState:
        return EpisodeState(
            self.outcome,
            self.finished,
            self.reward,
            tuple(self.rewards),
            tuple(self.metadata),
            self.error,
            self.last_output,
            self.tool_calls,
            self.tool_errors,
        )

    def copy(self) -> _Log:
        return replace(self, rewards=list(self.rewards), metadata=list(self.metadata))


def _forget_sessions(live: weakref.WeakSet[Episode]) -> None:
    """In a forked child, the episodes it inherited keep no session: those are the parent's, which
    the child must neither call nor delete (at its exit, or when it collects an episode). The
    episodes stay live: their next `start` opens the child's own."""
    for episode in list(live):
        episode._session = None
        process.forget(episode._session_slot)


_live: weakref.WeakSet[Episode] = process.per_process(weakref.WeakSet(), _forget_sessions)


def _end_all_sessions() -> None:
    """At exit, sessions are deleted concurrently, in the background; the loop waits for them
    (bounded): the prefetched spares first, then every live episode's."""
    for connection, session in _prefetch.drain():
        admission.close_sessions([session], connection, wait=False)
    for episode in list(_live):
        episode.close(wait=False)


on_exit(_end_all_sessions)
# Checked once per process and env: id(spec) → spec (kept alive, so its id stays its own).
_drift_checked: dict[int, EnvSpec] = process.per_process({})
_drift_lock = process.lock()
_deployment_refused: dict[int, str] = process.per_process({})  # id(spec) → its refusal, raised at every start
_scoring_lock = process.lock()
_split_sizes: dict[tuple[Connection, str], int] = process.per_process({})  # for starts that name no task


class Episode:
    """One rollout at a time against one ORS environment.

    `name` names the env in log lines (a shim passes its class's name); `owner`, a class, keys
    what is per class: the session budget `set_max_sessions(n, owner)` sets and the seeded task
    draw. Keyword options, all optional:
        base_url: the server's URL (default: `spec.env_var`, then the snapshot's target); several
            (a list, or URLs separated by commas) are replicas of the env, each session pinned
            to the one it opened on (`orlgen.runtime.session.admission`).
        api_key: OpenReward API key: authenticates requests and reaches every session as the
            `api_key` and `OPENREWARD_API_KEY` secrets (it wins over those names in `secrets`).
        secrets: per-session secrets, forwarded to the server; never logged or shown. Default:
            the environment variables named by the snapshot's secret names (`spec.secret_names`),
            read at each `start`. A key given here as `api_key` is used when `api_key=` is not.
        split: the split used when a start names none.
        timeout: seconds any one request may take (opening a session includes waiting for the
            environment's setup, for a slot of the session budget and for a busy env: see
            `orlgen.runtime.session.admission`); past it the rollout ends as an environment error.
        on_drift: what to do when the first session of the process lists tools that differ from
            the snapshot: "warn" (log), "raise" (DriftError from `start`) or "ignore".
        on_deployment_change: what to do when the first session of the process finds another
            deployment of the environment than the snapshot recorded (its `/version`): "warn"
            (log one line) or "refuse" (`DeploymentChanged`, a DriftError, from that `start` and
            from every later one of the env in the process). Default: `ORLGEN_ON_DEPLOYMENT_CHANGE`,
            else "warn".
        reward: the rule `score()` applies (`RewardRule`, or a reduction's name for that
            reduction alone: "last", "sum", "mean", "max", "min"). Default: the rule the snapshot
            records (`spec.reward_rule`), which every trainer's module and `orlgen eval` apply.
        prefetch: for serial starts of one task (GRPOTrainer's groups), `num_generations`: the
            first start of a task opens that many sessions together for the next starts (see
            `orlgen.runtime.session.prefetch` for the cost). 0 (off) by default.
        max_output_chars: a tool output's or a prompt's text longer than this reaches the model
            cut, with a marker saying so (default: `ORLGEN_MAX_OUTPUT_CHARS`, else 100,000).
        num_generations: for starts that name no task, how many starts in a row play each drawn
            task, so a group plays one task.
        seed: the seed of that draw (`orlgen.runtime.session.draw`).
        image_limits: how many images, and decoded pixels in all, one answer may bring the model
            (`orlgen.runtime.content.ImageLimits`; default: `ORLGEN_MAX_IMAGES` and
            `ORLGEN_MAX_IMAGE_PIXELS`, else 16 and 40,000,000); an image past them is a marker.
        env_overrides: values the env's own code reads instead of its defaults, sent at each
            session's opening as the SDK's `env_overrides` (keys `OPENAI_BASE_URL`,
            `OPENAI_API_KEY`, `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`); never logged or shown.

    `copy.copy(episode)` keeps the rollout's state but no session; pickling keeps the options.
    """

    _session: Any  # the open session (`ors.Session`), or None
    _task: tuple[str, int] | None  # the rollout's (split, index)
    _listed: frozenset[str] | None  # the session's tool names, once read
    _log: _Log
    _scored_by: str | None  # the scorer that owns this rollout's reward

    def __init__(
        self,
        spec: EnvSpec,
        *,
        name: str = "Episode",
        owner: type | None = None,
        base_url: str | Sequence[str] | None = None,
        api_key: str | None = None,
        secrets: dict[str, Any] | None = None,
        split: str = "train",
        timeout: float = 600.0,
        on_drift: DriftPolicy = "warn",
        on_deployment_change: DeploymentPolicy | None = None,
        reward: RewardRule | str | None = None,
        prefetch: int = 0,
        max_output_chars: int | None = None,
        num_generations: int = 1,
        seed: int = 0,
        image_limits: _content.ImageLimits | None = None,
        env_overrides: Mapping[str, str] | None = None,
    ) -> None:
        rule = spec.reward_rule if reward is None else RewardRule.of(reward)
        self.spec, self.name, self.owner = spec, name, owner
        self._options: dict[str, Any] = {
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
        self.rule = rule
        self._prefetch = prefetch
        self._num_generations = num_generations
        self._seed = seed
        self._given_key = choose_api_key(api_key, secrets)  # a target not trusted with it never gets it
        self.connection = Connection.resolve(spec.target, spec.env_var, base_url, self._given_key)
        self._secrets = dict(secrets) if secrets is not None else None
        self._split = split
        self.timeout = timeout
        self._on_drift = on_drift
        self._on_deployment_change = deployment_policy(on_deployment_change)
        self._session_slot: list[Any] = []  # the open session, when there is one
        self._secret_values: tuple[str, ...] = ()  # masked as *** in server text (set at each start)
        weakref.finalize(self, admission.close_sessions, self._session_slot, self.connection)
        _live.add(self)
        # Here, not only at the first request: TRL's async worker makes adapters on its main thread
        # but calls them on a pool, where no handler can be installed (its stop() sends SIGTERM).
        install_sigterm()
        self._clear()
        warn_missing_secrets(self._owner_key, name, spec, secrets, api_key)

    @property
    def options(self) -> dict[str, Any]:
        """The keyword options this episode was made with (`name` and `owner` aside)."""
        return dict(self._options)

    @property
    def masked_values(self) -> tuple[str, ...]:
        """The values masked as `***` in what this rollout shows (its secrets, the API key,
        env_overrides' keys), for a shim that writes the rollout elsewhere (`ors.uploader`)."""
        return self._secret_values

    @property
    def _owner_key(self) -> str:
        owner = self.owner
        return f"{owner.__module__}.{owner.__qualname__}" if owner is not None else f"{self.name}@{id(self.spec)}"

    def __repr__(self) -> str:
        return f"{self.name}({self.connection!r}, split={self._split!r}, outcome={self._log.outcome!r})"

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        """Pickles as its options: a session does not cross processes."""
        return {"spec": self.spec, "name": self.name, "owner": self.owner, **self._options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        type(self).__init__(self, **state)

    def __copy__(self) -> Episode:
        """A new episode with the same options and this rollout's state, and no session."""
        clone = type(self).__new__(type(self))
        clone.__setstate__(self.__getstate__())
        clone._log = self._log.copy()
        clone._scored_by = self._scored_by
        return clone

    @property
    def state(self) -> EpisodeState:
        """The rollout's state now, as a value."""
        return self._log.frozen()

    @property
    def task(self) -> tuple[str, int] | None:
        """The rollout's (split, index); None for an ad-hoc task or before `start`."""
        return self._task

    @property
    def open(self) -> bool:
        """Whether the rollout holds a session on the server now (and so a budget slot)."""
        return bool(self._session_slot)

    @property
    def offered(self) -> frozenset[str] | None:
        """The tools this task's session offers (task-only tools included), None when unknown.
        Asks the session only where capture did not record the answer (`offers.offered`)."""
        spec = self.spec
        return _offers.offered(
            spec.tool_fingerprints, self._task, spec.offered_on, spec.probed_tasks, self._session_tools
        )

    @property
    def scored_by(self) -> str | None:
        """The scorer that owns this rollout's reward, once one has read it."""
        return self._scored_by

    def start(
        self,
        split: str | None = None,
        index: int | None = None,
        task_spec: Mapping[str, Any] | str | None = None,
        carried: Any = None,
    ) -> Step:
        """End the previous rollout, open a session on the task and return its prompt as a `Step`.

        The task is `index` in `split` (default: the `split` option), or an ad-hoc `task_spec`
        (a dict or its JSON text) that no split holds; with neither, the next task of a seeded
        walk over the split (see `orlgen.runtime.session.draw`). `carried`: the messages the trainer's
        prompt already holds with their roles (a conversation-shaped env's system message),
        which the prompt then does not repeat."""
        self.close()
        self._clear()
        if (refusal := _deployment_refused.get(id(self.spec))) is not None:  # nothing is asked of that deployment
            raise DeploymentChanged(refusal)
        split = split or self._split
        secrets = self._secrets if self._secrets is not None else secrets_from_env(self.spec.secret_names)
        self._secret_values = _secret_values(secrets, self.connection.api_key) + _override_keys(self._env_overrides)
        if not self.connection.trusted:  # the snapshot's own remote target: see `Connection.resolve`
            how = f"base_url= or {self.spec.env_var}"
            secrets = _secrets.for_unnamed_target(secrets, self.spec.target.value, self._given_key, how)
        spec = _task_spec(task_spec)
        index = None if spec is not None or index is None else int(index)
        label = "(task_spec)" if spec is not None else f"{split}[{'?' if index is None else index}]"
        try:
            if spec is None and index is None:
                index = self._draw(split)
                label = f"{split}[{index}]"
            self._task = None if index is None else (split, index)  # an ad-hoc task offers what it offers
            session = self._open_session(split, index, secrets, spec)
            self._session_slot.append(session)
            self._session = session
            self._log.opened = True
            prompt = self._bounded(self._masked(self._prompt(session, carried)))
            self._check_drift(session)
            return Step(prompt)
        except (DriftError, budget.BudgetError):  # the run's setup is wrong: not the env's failure
            raise
        except _wire.WireError as exc:
            return self._wire_failed(f"the prompt of task {label}", exc)
        except Exception as exc:  # any transport or server failure is the environment's
            return self._env_failed(f"could not start task {label}", exc)

    def call(self, name: str, arguments: Mapping[str, Any], params: type[BaseModel] | None = None) -> Step:
        """Run the tool `name` (its wire name): validated by `params` when given (a value equal to
        the schema's default is not sent), refused without a request when this task does not
        offer it or the env's breaker is open, the answer recorded."""
        self._log.tool_calls += 1
        if self._session is None:
            ended = "the episode is over" if self._log.finished else "no episode is running (call reset first)"
            return self._model_error(f"{name} was not run: {ended}")
        refused = _offers.refusal(name, self._task, self.spec.offered_on, self.spec.probed_tasks, self._session_tools)
        if refused is not None:
            return self._model_error(refused)  # a task-only tool this task does not offer: nothing is sent
        payload = _payload(name, params, arguments)
        if isinstance(payload, str):
            return self._model_error(payload)
        refusal = admission.call_refusal(self.connection, self._session)
        if refusal is not None:  # the env was found dead by another rollout: nothing is sent
            return self._env_failed(f"{name} was not run", admission.CircuitOpen(refusal))
        session = self._session
        started = time.monotonic()
        try:
            answer = self.connection.run(lambda env: session.call_tool(name, payload), self.timeout)
        except ToolRefused as exc:
            detail = _wire.cut(str(exc.detail), self._max_output_chars)  # server text, for the model: bounded too
            return self._model_error(f"{name} was not run ({exc.reason}): {self._masked(detail)}")
        except _wire.WireError as exc:  # the session validated the answer: a value the protocol does not allow
            return self._wire_failed(f"tool {name}", exc)
        except Exception as exc:  # transport, dead session, crashed tool, timeout
            return self._env_failed(f"{name} failed", exc)
        finally:
            COUNTERS.tool_call(name, time.monotonic() - started)
        return self._record(answer)

    def refuse(self, message: str, count: int = 1) -> Step:
        """`count` calls the shim found wrong before they reached `call` (a wrong signature, text
        that names no tool, calls past a turn's cap): counted as the model's failed calls, nothing
        sent, the rollout goes on."""
        self._log.tool_calls += count
        self._log.tool_errors += count - 1
        return self._model_error(message)

    def submit_final_message(self, message: str) -> Step | None:
        """Give the model's final plain message to the env's @terminal tool, which grades it, and
        end the rollout. None when there is nothing to do: no terminal tool, or no running episode."""
        terminal = self.spec.terminal_tool
        if terminal is None or self._session is None or self._log.finished:
            return None
        session = self._session
        try:
            answer = self.connection.run(lambda env: session.call_terminal_tool(message), self.timeout)
        except ToolRefused as exc:
            return self._env_failed(f"terminal tool {terminal} was not run ({exc.reason})", exc)
        except _wire.WireError as exc:  # the session validated the answer: a value the protocol does not allow
            return self._wire_failed(f"tool {terminal}", exc)
        except Exception as exc:  # transport, dead session, crashed tool, timeout
            return self._env_failed(f"terminal tool {terminal} failed", exc)
        step = self._record(answer)
        self._log.finished, self._log.outcome = True, "finished"  # the terminal tool ends the rollout
        self.close()
        return step

    def score(self, scorer: str = "episode", rule: RewardRule | str | None = None) -> float | None:
        """The rollout's reward by `rule` (default: the episode's), None when unscored. The rollout
        is over, so its session is deleted. The first scorer to ask owns the rollout (and counts
        it in the scoring coverage, `orlgen.runtime.COVERAGE`); any other scorer gets None."""
        self.close()
        reward = self.standing_reward(rule)
        with _scoring_lock:
            if self._scored_by is None:
                self._scored_by = scorer
                COVERAGE.add([(self._log, reward is not None)])  # scored: what this scorer gets
            elif self._scored_by != scorer:
                return None
        return reward

    def standing_reward(self, rule: RewardRule | str | None = None) -> float | None:
        """The reward the rule gives the rollout so far, without ending it or counting it in the
        scoring coverage: for a trainer whose host reads the reward from another process
        (verifiers' tool servers), told after every call in case the rollout stops unfinished."""
        log = self._log
        applied = self.rule if rule is None else RewardRule.of(rule)
        return applied.apply(log.rewards, ran=log.opened, finished=log.finished, failed=log.outcome == "env_error")

    def score_group(self, candidates: list[dict[str, Any]]) -> list[float]:
        """The env's `/score_group` over this rollout's open session (raises when it cannot)."""
        session = self._session
        if session is None:
            raise RuntimeError("the episode holds no session")
        return list(self.connection.run(lambda client: session.score_group(candidates), self.timeout))

    def check_reachable(self, timeout: float) -> None:
        """List the env's splits once, so a caller that plays many rollouts (`orlgen eval`) can
        stop at one clear line instead of recording each as an env error. Raises
        `ConnectionError` naming the (redacted) address and the first line of the cause."""
        try:
            self.connection.run(lambda env: env.list_splits(), timeout)
        except Exception as exc:
            raise ConnectionError(f"{self.connection!r} cannot be reached: {described(exc)}") from exc

    def close(self, wait: bool = True) -> None:
        """Delete the session, if one is open (idempotent): waited for (bounded), or in the
        background (`wait=False`) after a failure, when the server may be gone."""
        self._session = None
        admission.close_sessions(self._session_slot, self.connection, wait=wait)

    def _clear(self) -> None:
        self._session = None
        self._task = None
        self._listed = None
        self._log = _Log()
        self._scored_by = None

    def _draw(self, split: str) -> int:
        """The task a start without one plays: the split's size is asked once per process."""
        key = (self.connection, split)
        if key not in _split_sizes:
            _split_sizes[key] = int(self.connection.run(lambda env: env.num_tasks(split), self.timeout))
        owner = self._owner_key
        return _draw.next_task(owner, split, _split_sizes[key], seed=self._seed, repeats=self._num_generations)

    def _prompt(self, session: Any, carried: Any) -> Any:
        """The task's prompt. A conversation-shaped environment is read as messages: those the
        trainer's prompt already carries with their roles are not repeated, the rest keep their
        roles as labelled text."""
        if self.spec.conversation:
            messages = self.connection.run(lambda env: session.get_messages(), self.timeout)
            return _content.conversation(messages, carried, limits=self._image_limits)
        blocks = self.connection.run(lambda env: session.get_prompt(), self.timeout)  # validated by the session
        return _content.render(blocks, limits=self._image_limits)

    def _open_session(self, split: str, index: int | None, secrets: Mapping[str, Any] | None, spec: Any = None) -> Any:
        """A new session for the task, within the env's budget and breaker (`admission`);
        with `prefetch`, one of the group opened together (never for an ad-hoc task)."""
        opening = _Opening(secrets, self.spec.toolset, self._env_overrides)
        opener = lambda env: _open(env, split, index, opening, spec)  # noqa: E731
        if self._prefetch < 2 or spec is not None:
            return admission.open_sessions(self.connection, self.owner, self.timeout, opener)[0]
        key = (self.connection, split, index, repr(sorted((secrets or {}).items())), opening.overrides_key)
        admission.close_sessions(_prefetch.stale(self.connection, key), self.connection, wait=False)
        _prefetch.counted(key)
        session = _prefetch.take(key)
        if session is None:
            width = _prefetch.width(self.connection, self._prefetch)
            session, *spare = admission.open_sessions(self.connection, self.owner, self.timeout, opener, width)
            _prefetch.keep(key, spare)
        return session

    def _session_tools(self) -> frozenset[str] | None:
        """The session's tool names, read once per rollout (None when they cannot be read)."""
        if self._listed is None and self._session is not None:
            session = self._session
            try:
                listed = self.connection.run(lambda env: session.list_tools(), self.timeout)
                self._listed = frozenset(spec.name for spec in listed)
            except Exception:  # the call itself will meet the same failure, and report it
                return None
        return self._listed

    def _record(self, step: _wire.Step) -> Step:
        """Record a tool's answer, validated by the session (`ors.blocks.Step`), and return it for the model."""
        log = self._log
        log.rewards.append(step.reward)
        if step.reward is not None:
            log.reward = step.reward
        log.metadata.append(step.metadata)
        result = self._bounded(self._masked(_content.render(step.blocks, limits=self._image_limits)))
        log.last_output = _content.as_text(result) or "(no output)"
        if step.finished:
            log.finished, log.outcome = True, "finished"
            self.close()
        content = result if isinstance(result, list) else log.last_output
        return Step(content, step.reward, step.finished, step.metadata)

    def _bounded(self, content: str | list[dict[str, Any]]) -> ToolOutput:
        """Server text for the model cut to `max_output_chars` (each text part of content parts):
        a tool output, and a prompt, which a server can make as large as one."""
        bound = self._max_output_chars
        return _wire.cut(content, bound) if isinstance(content, str) else _cut_parts(content, bound)

    def _model_error(self, message: str) -> Step:
        """A call the model got wrong: it never reached the server, and the rollout goes on."""
        self._log.tool_errors += 1
        self._log.last_output = f"Error: {message}"
        return Step(self._log.last_output, failure=Failure("model", message))

    def _env_failed(self, what: str, exc: BaseException) -> Step:
        """The environment failed: end the rollout, unscored. The first such rollout of the
        process says so in the log too: without it a run against a dead env trains on error
        text, every reward None, and only the trainer's own "no reward" line hints at it."""
        step = self._end_unscored(what, exc)
        self._say_once(
            "unscored",
            f"a rollout ended unscored because the environment failed ({self._log.error}); every rollout it "
            "fails ends so, with reward None: said once per process, `env.error` holds each cause",
        )
        return step

    def _wire_failed(self, what: str, exc: _wire.WireError) -> Step:
        """The server answered with a value the protocol does not allow: an environment error,
        logged once with the env, what answered and the value."""
        step = self._end_unscored(f"{what} answered badly", exc)
        logger.warning("%s: %s", self.name, self._log.error)
        return step

    def _end_unscored(self, what: str, exc: BaseException) -> Step:
        """End the rollout as an environment error (counted by the env's breaker) and return the
        step the model reads; the breaker's opening is said once per process and env."""
        log = self._log
        log.error = first_line(redact(f"{what}: {described(exc)}", self._secret_values))
        opened = admission.env_failed(self.connection, exc, self._session)
        if opened is not None:
            self._say_once("breaker", opened)
        log.outcome, log.finished, log.reward = "env_error", True, None
        self.close(wait=False)  # the server may be gone: do not wait for it again
        log.last_output = f"Error: the environment failed ({log.error}); the episode is over."
        return Step(log.last_output, finished=True, failure=Failure("env", log.error))

    def _say_once(self, what: str, line: str) -> None:
        """One warning line per process, env and `what`, naming the env: the shim's name and the
        address without credentials (server text in `line` masked as the state's error is)."""
        connection = self.connection
        address = connection.address
        said = f"{self.name}: the environment {connection.env!r} at {address}: {redact(line, self._secret_values)}"
        log_once(f"{what} {admission.env_key(connection)}", said)

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

    def _check_drift(self, session: Any) -> None:
        """Once per process and env: compare the session's tools, then the env's deployment,
        with the snapshot's. A pinned deployment ("refuse") is checked even when drift is ignored."""
        with _drift_lock:
            if id(self.spec) in _drift_checked or (self._on_drift == "ignore" and self._on_deployment_change == "warn"):
                return
            _drift_checked[id(self.spec)] = self.spec
        problems = [] if self._on_drift == "ignore" else self._tool_drift(session)
        if problems:
            message = (
                f"{self.name}: the live environment's tools differ from the snapshot ({'; '.join(problems)}); "
                "run `orlgen snapshot` and review `orlgen diff`"
            )
            if self._on_drift == "raise":
                raise DriftError(message)
            logger.warning(message)
        self._check_deployment(drifted=bool(problems))

    def _tool_drift(self, session: Any) -> list[str]:
        live = self.connection.run(lambda env: session.list_tools(), self.timeout)
        return tool_drift(self.spec.tool_fingerprints, {spec.name: spec for spec in live})

    def _check_deployment(self, drifted: bool) -> None:
        """Compare the env's /version with the capture's: under "warn", log "same schema, new
        deployment" (unless the tools `drifted`: that line already said to snapshot again); under
        "refuse", raise `DeploymentChanged` now and at every later start of the env."""
        recorded = self.spec.deployment
        if recorded is None or (drifted and self._on_deployment_change == "warn"):
            return
        from .ors import provenance

        try:
            now = self.connection.run(provenance.live, self.timeout)
        except Exception:  # best effort: an unreadable /version is no evidence of a new deployment
            return
        change = provenance.changed(recorded, now)
        if change is None:
            return
        if self._on_deployment_change == "refuse":
            _deployment_refused[id(self.spec)] = (
                f"{self.name}: the environment's deployment changed since the snapshot ({change}) and "
                f"on_deployment_change (or {DEPLOYMENT_POLICY_VAR}) is 'refuse': no rollout of this env runs "
                "in this process; review the new deployment and record it with `orlgen snapshot`"
            )
            raise DeploymentChanged(_deployment_refused[id(self.spec)])
        logger.warning(
            f"{self.name}: same schema, new deployment of the environment ({change}); "
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


def _payload(name: str, params: type[BaseModel] | None, arguments: Mapping[str, Any]) -> dict[str, Any] | str:
    """The arguments as sent: those given (`UNSET` is "not given"), validated by the tool's
    params model, a value equal to the schema's default left out (the server applies its own);
    or the model's error, in one line."""
    from .unset import UNSET

    given = {key: value for key, value in arguments.items() if value is not UNSET}
    if params is None:
        return given
    from pydantic import ValidationError

    try:
        model = params.model_validate(given)
    except ValidationError as exc:
        return f"invalid arguments for {name}: {_validation_text(exc)}"
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_defaults=True)


def _secret_values(secrets: Mapping[str, Any] | None, api_key: str | None) -> tuple[str, ...]:
    """The values to mask in server text: every secret's (a `(value, domains)` pair's value too)
    and the API key."""
    values = [entry[0] if isinstance(entry, tuple) else entry for entry in (secrets or {}).values()]
    return tuple(value for value in (*values, api_key) if isinstance(value, str) and value)


def _cut_parts(parts: list[dict[str, Any]], max_chars: int) -> list[dict[str, Any]]:
    """Content parts with each text part bounded like a text-only output (images pass as they are)."""
    return [{**part, "text": _wire.cut(part["text"], max_chars)} if part["type"] == "text" else part for part in parts]


def _task_spec(value: Any) -> dict[str, Any] | None:
    """An ad-hoc task: a dict, or its JSON text (an Arrow column of varying shapes)."""
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    raise ValueError(f"a row's task_spec must be a JSON object, not {type(value).__name__}")


def _validation_text(exc: Any) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
