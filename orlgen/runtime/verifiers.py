"""verifiers 0.4's side of a generated `<name>_verifiers.py` module: the machinery every such module
shares, so the module itself holds only what is particular to its environment (its tools, their
parameter models, its spec).

How one rollout runs (TRAINERS.md §2–3):

- The host loads tasks from the snapshot's tasks file (`OrsTaskset.load`: no request), one
  `OrsTaskData` per task with its split, index and stored fields.
- verifiers starts one tool server process per rollout (`OrsTask.toolsets`), a `python -m` of the
  generated module. Its `OrsToolset.setup_task` opens the ORS session (an `Episode`, so the
  session budget, breaker, task-only refusals, secrets masking and reward rule are the TRL
  module's), then advertises only the tools this task's session offers.
- The session's prompt exists only once the session does, after the host built the task: the
  toolset pushes it into the rollout's `OrsState`, and `OrsTask.session_prompt` (a request
  interceptor, run on the task's user turn before the harness starts) puts it in place of the
  placeholder the task carries.
- Each tool call goes through `Episode.call`; what the host needs (the standing reward by the
  env's rule, `finished`, counts) is pushed into `OrsState` after it, the one channel from the
  tool server to the host. `@vf.reward`, `@vf.stop` and `@vf.metric` read it there.
- Secrets: verifiers starts the tool server with the host's environment minus every variable
  whose name contains `API_KEY`, so the secrets the env needs (the snapshot's `secret_names`)
  and the OpenReward key are written by the host to a private file (`child_secrets`: mode 0600,
  removed when the host exits) whose path rides in the tool server's config; `setup_task` puts
  them back in the tool server's environment before the session opens, so `Episode` finds them
  where the TRL module does. No other process verifiers starts (the agent program) is told of it.
- A tool server is `python -m <module>` started in a directory of verifiers' own: a module found
  through a relative `PYTHONPATH` entry cannot be imported there, and verifiers would wait three
  minutes for a server that exited at once. `OrsTask.setup` (on the host, before the launch)
  fails the rollout with one line naming the module instead (`unreachable`).
- The session is deleted when the env finishes the episode, else when the tool server exits:
  verifiers SIGTERMs it, and uvicorn re-raises SIGTERM after its shutdown, which would kill the
  process before its exit stack unwinds (§3.4 pitfall 4), so `setup_task` installs a handler
  that raises `SystemExit` instead.

Nothing here is imported by the TRL module or by `orlgen.runtime`'s package: verifiers is
imported at the top of this file, and only a verifiers module imports it.
"""

from __future__ import annotations

import base64
import importlib.machinery
import inspect
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, ClassVar, TypeVar

import verifiers.v1 as vf  # type: ignore[import-not-found, unused-ignore]
from mcp.types import ImageContent, TextContent  # type: ignore[import-not-found, unused-ignore]
from pydantic import BaseModel, Field
from verifiers.v1.utils.decorators import discover_decorated  # type: ignore[import-not-found, unused-ignore]

from . import child_secrets
from .content import png
from .data.spec import EnvSpec
from .episode import Episode

# What a generated verifiers module may import (the rest is this shim's own).
__all__ = [
    "PLACEHOLDER",
    "OrsState",
    "OrsTask",
    "OrsTaskConfig",
    "OrsTaskData",
    "OrsTaskset",
    "OrsTasksetConfig",
    "OrsToolset",
    "OrsToolsetConfig",
    "tool",
]

F = TypeVar("F", bound=Callable[..., Any])
TaskT = TypeVar("TaskT")

# What the task's user turn says until the session's prompt replaces it (`OrsTask.session_prompt`).
PLACEHOLDER = "(orlgen: this turn is replaced by the prompt of the task's ORS session)"


class OrsTaskData(vf.TaskData):  # type: ignore[misc]
    """One stored task: its split and index (which the session is opened on) and its fields."""

    split: str
    task_index: int
    task: dict[str, Any] = Field(default_factory=dict)


class OrsState(vf.State):  # type: ignore[misc]
    """What the tool server tells the host about its rollout, pushed after setup and each call."""

    prompt: str | None = None
    reward: float | None = None  # by the env's rule, so far (final once `finished`)
    finished: bool = False
    outcome: str = "running"
    tool_calls: int = 0
    tool_errors: int = 0


class OrsTaskConfig(vf.TaskConfig):  # type: ignore[misc]
    """`base_url`: the environment's URL, over the module's `ORLGEN_<NAME>_URL` and its target."""

    base_url: str | None = None


class OrsToolsetConfig(vf.ToolsetConfig):  # type: ignore[misc]
    """`secrets_file`: the host's private file of the session's secrets (`child_secrets`): a
    path, never a value, so the config (`VF_CONFIG`) may be seen."""

    base_url: str | None = None
    secrets_file: str | None = None


class OrsTasksetConfig(vf.TasksetConfig):  # type: ignore[misc]
    """`split`: which of the snapshot's splits the taskset yields."""

    split: str = "train"
    task: OrsTaskConfig = OrsTaskConfig()


def tool(name: str, params: type[BaseModel] | None, described: Mapping[str, str] | None = None) -> Callable[[F], F]:
    """Mark a `**arguments` method as the MCP tool `name` (the name the model is shown), with one
    keyword per field of `params`, each with its type, constraints and description: the MCP SDK
    derives the schema the model sees from the signature (TRAINERS.md §2.1), so it keeps the
    author's bounds, enums, defaults and nested models, as the TRL module validates them.
    `described` gives a parameter's description by wire name: the words the TRL module's
    docstring shows for it (an env documented in `Args:` has none in its schema, and what the
    schema cannot type, such as an object default, is said there). The signature has no return
    annotation: MCP would add an output schema for one."""
    # Positional-only, and a name no model field can take: a parameter of the env may be `self`.
    parameters = [inspect.Parameter("_toolset", inspect.Parameter.POSITIONAL_ONLY)]
    for field_name, field in (params.model_fields if params else {}).items():
        words = (described or {}).get(field.alias or field_name, field.description)
        info = Field(description=words, alias=field.alias, examples=field.examples)
        hint = Annotated[(field.annotation, *field.metadata, info)]  # type: ignore[name-defined]
        default = inspect.Parameter.empty if field.is_required() else field.get_default()
        kind = inspect.Parameter.KEYWORD_ONLY
        parameters.append(inspect.Parameter(field_name, kind, annotation=hint, default=default))

    def apply(method: F) -> F:
        method.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        return vf.tool(method, name=name)  # type: ignore[no-any-return]

    return apply


def carried_secrets(spec: EnvSpec) -> list[str]:
    """The environment variables a session of `spec` may read: its secrets and the OpenReward key
    (`Episode` decides where the key goes: the platform, a URL the run names, loopback; see
    `Connection.resolve`). All of them are carried, not only those verifiers drops, so what the
    tool server sees does not hang on verifiers' rule; a variable that is not set is not written."""
    return [*spec.secret_names, "OPENREWARD_API_KEY"]


def unreachable(module: str) -> str | None:
    """Why the tool server of `module` could not import it (or orlgen), in one line; None when
    it can. verifiers 0.4's subprocess runtime starts it as `sys.executable -m module` in a fresh
    directory of its own (`verifiers/v1/mcp/launch.py:serve_in_runtime`) with this process's
    `PYTHONPATH`: there a relative entry names nothing, nor does the directory this process was
    started from. So its import path is the absolute entries of `PYTHONPATH` and this
    interpreter's own (site) path, which is where the module must be found."""
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    relative = {os.path.abspath(entry): entry for entry in entries if not os.path.isabs(entry)}
    own = {os.path.abspath(sys.path[0] or os.curdir)} if sys.path else set()  # the script's or cwd
    child = [entry for entry in entries if os.path.isabs(entry)]
    child += [p for p in sys.path[1:] if p and os.path.abspath(p) not in relative.keys() | own]
    for top in (module.partition(".")[0], "orlgen"):
        if importlib.machinery.PathFinder.find_spec(top, child) is not None:
            continue
        found = importlib.machinery.PathFinder.find_spec(top, sys.path)
        origin = found.origin if found is not None and found.origin else ""
        where = os.path.dirname(os.path.dirname(origin) if found and found.submodule_search_locations else origin)
        named = f" (PYTHONPATH names its directory as {relative[where]!r})" if where in relative else ""
        return (
            f"{module}: verifiers starts this rollout's tool server as `python -m {module}` in a directory "
            f"of its own, where {top} cannot be imported{named}: PYTHONPATH must name its directory by an "
            f"absolute path{f' (PYTHONPATH={where})' if where else ''}"
        )
    return None


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)


class OrsToolset(vf.Toolset[OrsToolsetConfig, OrsState]):  # type: ignore[misc]
    """One rollout's ORS session, served as MCP tools. A generated subclass sets `SPEC` and
    `NAME` and declares one `@vf.tool` per ORS tool that returns `await self.call(...)`."""

    TOOL_PREFIX = None  # the model sees the tools' own names, as TRL shows them
    SPEC: ClassVar[EnvSpec]
    NAME: ClassVar[str] = "Env"

    async def setup_task(self, task: OrsTaskData) -> None:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        child_secrets.restore(self.config.secrets_file)
        self.episode = Episode(self.SPEC, name=self.NAME, owner=type(self), base_url=self.config.base_url)
        self._exit_stack.callback(self.episode.close)
        prompt = self.episode.start(task.split, task.task_index)
        await self._with_state(self._publish)(prompt=prompt.text)

    def register(self, mcp: Any) -> None:
        add_tools(self, mcp, self.episode.offered)

    async def call(self, name: str, arguments: dict[str, Any], params: type[BaseModel] | None) -> Any:
        """Run the ORS tool `name` (its wire name); text, or MCP text and image content. Scores
        the rollout and deletes the session when the env says the episode is finished."""
        output = self.episode.call(name, arguments, params).content
        if self.episode.state.finished:
            self.episode.score()
        await self._publish()
        return output if isinstance(output, str) else [_mcp_part(part) for part in output]

    async def _publish(self, prompt: str | None = None) -> None:
        """Copy the rollout's state into `self.state`, which verifiers pushes to the host."""
        state, episode = self.state, self.episode.state
        if prompt is not None:
            state.prompt = prompt
        state.reward = self.episode.standing_reward()
        state.finished, state.outcome = episode.finished, episode.outcome
        state.tool_calls, state.tool_errors = episode.tool_calls, episode.tool_errors


def add_tools(toolset: OrsToolset, mcp: Any, offered: frozenset[str] | None) -> None:
    """Add the toolset's tools that are `offered` (all of them when None) to the MCP server, each
    described by its docstring without the source's indentation (verifiers' own `register` keeps
    it). `register` passes what this task's session offers."""
    for fn in discover_decorated(toolset, "tool"):
        name = getattr(fn, "tool_name", None) or fn.__name__
        if offered is None or name in offered:
            mcp.add_tool(toolset._with_state(fn), name=name, description=inspect.getdoc(fn) or None)


def _mcp_part(part: dict[str, Any]) -> Any:
    """A content part of the runtime's (text, or a PIL image) as MCP content, the image as PNG."""
    if part["type"] == "text":
        return TextContent(type="text", text=part["text"])
    data = base64.b64encode(png(part["image"])).decode()
    return ImageContent(type="image", data=data, mime_type="image/png")


class OrsTask(vf.Task[OrsTaskData, OrsState, OrsTaskConfig]):  # type: ignore[misc]
    """A stored task of the env: its tools (`TOOLSET`, one server per rollout), its reward by the
    env's rule, its stop on `finished`, the scoring coverage as metrics."""

    TOOLSET: ClassVar[type[OrsToolset]]

    @classmethod
    def toolsets(cls, config: OrsTaskConfig) -> list[Any]:
        secrets_file = child_secrets.write(carried_secrets(cls.TOOLSET.SPEC))
        return [cls.TOOLSET(OrsToolsetConfig(base_url=config.base_url, secrets_file=secrets_file))]

    async def setup(self, trace: vf.Trace, runtime: Any) -> None:
        """On the host, before the tool server starts: a module it could not import fails the
        rollout here, in one line, instead of after verifiers' three-minute wait for its port."""
        said = unreachable(type(self).TOOLSET.__module__)
        if said is not None:
            raise ModuleNotFoundError(said)

    @vf.intercept  # type: ignore[untyped-decorator, unused-ignore]
    async def session_prompt(self, request: vf.Request, trace: vf.Trace) -> Any:
        """The task's user turn, the placeholder, becomes the session's prompt."""
        prompt = trace.state.prompt
        messages = list(request.messages)
        found = [i for i, m in enumerate(messages) if m.role == "user" and m.content == PLACEHOLDER]
        if prompt is None or not found:
            return None
        for i in found:
            messages[i] = vf.UserMessage(content=prompt)
        return request.model_copy(update={"messages": messages})

    @vf.reward  # type: ignore[untyped-decorator, unused-ignore]
    async def env_reward(self, trace: vf.Trace) -> float:
        """The env's reward by its rule (the TRL module's); 0.0 when unscored (see `scored`)."""
        reward = trace.state.reward
        return 0.0 if reward is None else float(reward)

    @vf.stop  # type: ignore[untyped-decorator, unused-ignore]
    async def finished(self, trace: vf.Trace) -> bool:
        return bool(trace.state.finished)

    @vf.metric  # type: ignore[untyped-decorator, unused-ignore]
    async def scored(self, trace: vf.Trace) -> float:
        return float(trace.state.reward is not None)

    @vf.metric  # type: ignore[untyped-decorator, unused-ignore]
    async def env_error(self, trace: vf.Trace) -> float:
        return float(trace.state.outcome == "env_error")

    @vf.metric  # type: ignore[untyped-decorator, unused-ignore]
    async def unfinished(self, trace: vf.Trace) -> float:
        return float(not trace.state.finished and trace.state.outcome != "env_error")

    @vf.metric  # type: ignore[untyped-decorator, unused-ignore]
    async def tool_calls(self, trace: vf.Trace) -> float:
        return float(trace.state.tool_calls)

    @vf.metric  # type: ignore[untyped-decorator, unused-ignore]
    async def tool_errors(self, trace: vf.Trace) -> float:
        return float(trace.state.tool_errors)


class OrsTaskset(vf.Taskset[TaskT, OrsTasksetConfig]):  # type: ignore[misc]
    """The snapshot's stored tasks of one split, read from its tasks file: no request."""

    TASK: ClassVar[type[OrsTask]]

    def load(self) -> Iterator[OrsTask]:
        spec = self.TASK.TOOLSET.SPEC.dataset
        split = self.config.split
        if spec is None or split not in spec.num_tasks:
            raise ValueError(f"unknown split {split!r}: the snapshot has {sorted(spec.num_tasks) if spec else []}")
        for index, fields in sorted(spec.captured(split).items()):
            data = OrsTaskData(
                prompt=PLACEHOLDER, system_prompt=spec.system_prompt, split=split, task_index=index, task=fields
            )
            yield self.TASK(data, self.config.task)
