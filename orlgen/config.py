"""`[tool.orlgen]` in pyproject.toml → a validated Config. Unknown keys are errors, not ignored.

```toml
[tool.orlgen]
out = "generated"            # where snapshots and modules live
templates = "orlgen/templates"  # optional: templates that override the packaged ones
trainers = ["trl", "verifiers"]  # optional: the trainers every env's modules are rendered for
                             # (default ["trl"]): helpdesk.py, helpdesk_verifiers.py, helpdesk_skyrl.py

[[tool.orlgen.envs]]
target = "examples.helpdesk:Helpdesk"   # catalog name, URL or module:EnvClass
name = "helpdesk"            # optional module name
env = "helpdesk"             # optional: the env key on a multi-environment server
splits = ["train", "test"]   # optional: default all
tasks = "all"                # optional: "all", "none" or a sample size
probes = 3                   # optional: sessions per split to find task-only tools
toolset = "codex"            # optional: a built-in toolset its sessions open with (recorded)
reward = "sum"               # optional: the env's reward rule over its step rewards: "last" (the
                             # default), "sum", "mean", "max" or "min" ("outcome" and "summed" read
                             # as "last" and "sum"); recorded in the snapshot, applied by every
                             # trainer's module and by eval
unfinished_reward = -1.0     # optional: the reward of a rollout that ran and did not finish
reward_clamp = "0:1"         # optional: bounds of the reward, "LO:HI" (or [LO, HI])
secrets = ["JUDGE_API_KEY"]  # optional: secrets its sessions need, read from these environment
                             # variables at capture (and by the generated adapter); never values
trainers = ["trl"]           # optional: this env's trainers (default: [tool.orlgen] trainers)

[[tool.orlgen.mixtures]]
name = "support_mix"         # generated/support_mix.py: several envs for one trainer
envs = ["echo", "helpdesk"]  # module names of snapshots in `out`
weights = { echo = 1, helpdesk = 3 }  # optional: sampling weights per env, recorded as the module's
                             # build_dataset default (the share of rows, so of GRPO groups)

[tool.orlgen.diff]           # optional: this project's review rules (`orlgen diff`, `snapshot --check`)
rules = "1"                  # the rule set pinned (default: the latest), so a release's new rule waits
breaking = ["TOOL_ADDED"]    # rules promoted to breaking (a frozen eval suite)
ignore = ["TASK_COUNT_CHANGED"]  # rules not reported (a growing env); TRUST rules cannot be ignored

[tool.orlgen.vet]            # optional: `orlgen vet`'s rules
error = ["PARAM_UNDESCRIBED"]  # findings that fail vet (exit 1); also `warning = [...]`, `ignore = [...]`
```
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from orlgen import lookalike
from orlgen.capture.options import CaptureOptions
from orlgen.capture.toolsets import Toolset
from orlgen.errors import ConfigFileError
from orlgen.review.diff import RuleError, Rules, known_rule_set
from orlgen.review.vet import VetRuleError, VetRules
from orlgen.snapshot.model import Reward
from orlgen.trainers import DEFAULT_TRAINERS, known, trainer_names
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    FiniteFloat,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

PYPROJECT = "pyproject.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _known_trainer(name: Any) -> Any:
    """One message naming every installed trainer, built-in or plugin (pydantic's would say
    `Input should be ...`); a plugin's name is checked against the installed entry points only."""
    if isinstance(name, str) and known(name):
        return name
    shown = repr(name[:40]) if isinstance(name, str) else repr(name)
    raise PydanticCustomError(
        "trainer",
        "unknown trainer {given}: expected one of {valid}",
        {"given": shown, "valid": ", ".join(trainer_names())},
    )


def _a_list(names: Any) -> Any:
    if isinstance(names, str):
        raise PydanticCustomError(
            "trainers", "expected a list of trainer names, e.g. [{given}]", {"given": repr(names)}
        )
    return names


def _each_once(names: tuple[str, ...]) -> tuple[str, ...]:
    if not names:
        raise PydanticCustomError(
            "trainers", "name at least one trainer (one of {valid})", {"valid": ", ".join(trainer_names())}
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise PydanticCustomError("trainers", "trainer '{name}' is listed twice: list each once", {"name": repeated[0]})
    return names


# A list of trainers: each a known name, at least one, none twice.
TrainerList = Annotated[
    tuple[Annotated[str, BeforeValidator(_known_trainer)], ...], BeforeValidator(_a_list), AfterValidator(_each_once)
]


class EnvConfig(_Strict):
    target: str
    name: str | None = None
    env: str | None = None
    splits: tuple[str, ...] = ()
    tasks: Literal["all", "none"] | Annotated[StrictInt, Field(ge=0)] | None = None
    probes: StrictInt = Field(3, ge=0)
    reward: str = "last"
    unfinished_reward: float | None = None
    reward_clamp: str | tuple[float, float] | None = None
    toolset: Toolset | None = None
    secrets: tuple[str, ...] = ()  # names only; values come from the environment
    trainers: TrainerList | None = None  # None: [tool.orlgen] trainers

    @field_validator("tasks", mode="before")
    @classmethod
    def _task_mode(cls, tasks: Any) -> Any:
        """One message for every wrong value, naming all three forms (pydantic's names only the
        first member of the union it tried)."""
        if tasks in ("all", "none") or (type(tasks) is int and tasks >= 0):
            return tasks
        raise PydanticCustomError(
            "tasks",
            'expected "all", "none" or a number N >= 0 (a sample of N tasks), not {given}',
            {"given": repr(tasks)},
        )

    @model_validator(mode="after")
    def _reward_rule(self) -> EnvConfig:
        self.reward_rule()  # a rule the runtime would refuse is this env's error, in one line
        return self

    def reward_rule(self) -> Reward:
        """The rule the keys declare, as the snapshot records it."""
        clamp = list(self.reward_clamp) if isinstance(self.reward_clamp, tuple) else self.reward_clamp
        return Reward.declared(self.reward, self.unfinished_reward, clamp)

    @field_validator("secrets")
    @classmethod
    def _names_only(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not _SECRET_NAME.match(name):
                raise ValueError(
                    f"{name[:40]!r} is not a secret name (letters, digits, _; the value comes from "
                    "the environment variable of that name, never from this file)"
                )
        return names

    def capture_options(self) -> CaptureOptions:
        """The capture options, with secret values read from the environment now."""
        return CaptureOptions(
            env=self.env,
            name=self.name,
            splits=self.splits,
            tasks=self.tasks,
            probes=self.probes,
            reward=self.reward_rule(),
            toolset=self.toolset,
            secrets=parse_secrets(self.secrets),
        )


_SECRET_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_secrets(items: Iterable[str]) -> dict[str, str]:
    """`NAME=VALUE` or `NAME` (value from the environment variable NAME) → {name: value}.

    A missing variable is an error naming it: a probe session without its secret fails later,
    with a less clear message.
    """
    secrets: dict[str, str] = {}
    for item in items:
        name, has_value, value = item.partition("=")
        if not _SECRET_NAME.match(name):
            raise ConfigFileError(
                f"secret {name[:40]!r}: expected NAME or NAME=VALUE, NAME made of letters, digits and _"
            )
        if not has_value:
            value = os.environ.get(name, "")
            if not value:
                raise ConfigFileError(f"secret {name}: the environment variable {name} is not set")
        secrets[name] = value
    return secrets


class MixtureConfig(_Strict):
    name: str  # the mixture module's name
    envs: tuple[str, ...] = Field(min_length=2)  # module names of snapshots in `out`
    weights: dict[str, FiniteFloat] | None = None  # sampling weights by env (the share of rows), recorded in the module

    @model_validator(mode="after")
    def _weights_of_members(self) -> MixtureConfig:
        """Weights name only the mixture's envs, none negative, not all zero: one line here,
        not an error when the module is imported."""
        weights = self.weights or {}
        unknown = sorted(set(weights) - set(self.envs))
        if unknown:
            raise PydanticCustomError(
                "mixture_weights",
                "weights name {unknown}, which are not among this mixture's envs {envs}",
                {"unknown": unknown, "envs": list(self.envs)},
            )
        if self.weights is not None and (any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0):
            raise PydanticCustomError("mixture_weights", "weights must be non-negative and not all zero")
        return self


class DiffConfig(_Strict):
    rules: str | None = None  # the rule set pinned (None: the latest)
    breaking: tuple[str, ...] = ()  # rule names promoted to breaking
    ignore: tuple[str, ...] = ()  # rule names not reported

    @field_validator("rules", mode="before")
    @classmethod
    def _known_set(cls, name: Any) -> Any:
        """One message naming the known sets, for a number too (pydantic's would say `Input should be ...`)."""
        try:
            return None if name is None else known_rule_set(name)
        except RuleError as exc:
            raise PydanticCustomError("diff_rule_set", str(exc)) from None

    @model_validator(mode="after")
    def _known_rules(self) -> DiffConfig:
        self.review_rules()
        return self

    def review_rules(self) -> Rules:
        try:
            return Rules.of(self.breaking, self.ignore, self.rules)
        except RuleError as exc:
            raise PydanticCustomError("diff_rule", str(exc)) from None


class VetConfig(_Strict):
    error: tuple[str, ...] = ()  # rule names whose findings fail `orlgen vet` (exit 1)
    warning: tuple[str, ...] = ()  # rule names reported without failing
    ignore: tuple[str, ...] = ()  # rule names not reported

    @model_validator(mode="after")
    def _known_rules(self) -> VetConfig:
        self.rules()
        return self

    def rules(self) -> VetRules:
        try:
            return VetRules.of(self.error, self.warning, self.ignore)
        except VetRuleError as exc:
            raise PydanticCustomError("vet_rule", str(exc)) from None


class Config(_Strict):
    out: Path = Path("generated")
    templates: Path | None = None
    trainers: TrainerList = DEFAULT_TRAINERS  # every env's, unless the env lists its own
    envs: tuple[EnvConfig, ...] = ()
    mixtures: tuple[MixtureConfig, ...] = ()
    diff: DiffConfig = DiffConfig()
    vet: VetConfig = VetConfig()

    @model_validator(mode="after")
    def _each_env_once(self) -> Config:
        """An env listed twice would be captured twice by `sync`, into one module or two."""
        seen: dict[tuple[str, str | None], int] = {}
        for index, env in enumerate(self.envs):
            first = seen.setdefault((env.target, env.env), index)
            if first != index:
                also = f" (env {env.env!r})" if env.env else ""
                raise PydanticCustomError(
                    "duplicate_target",
                    "envs.{index}: target {target}{also} is listed twice (also envs.{first}): list each env once",
                    {"index": index, "target": repr(env.target), "also": also, "first": first},
                )
        return self


def mixture_members(config: Config) -> dict[str, tuple[str, ...]]:
    return {mixture.name: mixture.envs for mixture in config.mixtures}


def mixture_weights(config: Config) -> dict[str, dict[str, float]]:
    """Each mixture's sampling weights by env, for the mixtures whose config gives them."""
    return {mixture.name: dict(mixture.weights) for mixture in config.mixtures if mixture.weights}


def load_config(project: Path = Path(".")) -> Config:
    """The config of the project in `project` (defaults when there is no `[tool.orlgen]`).

    Relative paths are taken relative to the project directory.
    """
    path = project / PYPROJECT
    if not path.exists():
        return Config(out=project / "generated")
    try:
        tool = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
        table = tool.get("orlgen", {}) if isinstance(tool, dict) else None
        config = Config.model_validate(table)
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from exc
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ConfigFileError(
            f"{path}: [tool.orlgen] {_problem(error)}{_recorded_plugin(project, table, error)}"
        ) from exc
    _refuse_unsafe_path(path, project, "out", config.out)
    _refuse_misleading_out(path, project, config.out)
    if config.templates is not None:
        _refuse_unsafe_path(path, project, "templates", config.templates)
    return config.model_copy(
        update={
            "out": project / config.out,
            "templates": None if config.templates is None else project / config.templates,
        }
    )


def _recorded_plugin(project: Path, table: Any, error: ErrorDetails) -> str:
    """For a trainer this machine lacks that the output directory's `orlgen.lock` records as a
    plugin: what to install (a checkout made where the plugin is installed)."""
    from orlgen.render import lock

    out = table.get("out", "generated") if isinstance(table, dict) else None
    if error["type"] != "trainer" or not isinstance(out, str):
        return ""
    recorded = lock.read(project / out / lock.NAME)
    plugin = None if recorded is None else recorded.plugins.get(str(error["input"]))
    return "" if plugin is None else f"; {lock.NAME} records it as a plugin: pip install '{plugin[0]}=={plugin[1]}'"


def _problem(error: ErrorDetails) -> str:
    """A validation error as `where: what`; an unknown key says which known key it is close to."""
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] != "extra_forbidden":
        return f"{where}: {error['msg']}" if where else error["msg"]
    table = tuple(part for part in error["loc"][:-1] if isinstance(part, str))
    known = list(_TABLES.get(table, Config).model_fields)
    close = difflib.get_close_matches(str(error["loc"][-1]), known, n=1, cutoff=0.6)
    return f"{where}: unknown key ({f'did you mean `{close[0]}`?' if close else 'known keys: ' + ', '.join(known)})"


_TABLES: dict[tuple[str, ...], type[BaseModel]] = {
    (): Config,
    ("envs",): EnvConfig,
    ("mixtures",): MixtureConfig,
    ("diff",): DiffConfig,
    ("vet",): VetConfig,
}


def _refuse_unsafe_path(config: Path, project: Path, key: str, value: Path) -> None:
    """`out` and `templates` name directories of the project, as written: a pull request must not
    point `check` at files outside it (an absolute path, `..`, a committed symbolic link on the
    way, which also makes `check` print what it reads in its diff) or at a name the file system
    reads as another (`generated.` is `generated` on Windows, and a different directory here)."""
    why = _unsafe_path(project, value)
    if why is not None:
        shown = lookalike.escaped(str(value))
        raise ConfigFileError(f"{config}: [tool.orlgen] {key}: {shown!r} refused: {why}")


def _unsafe_path(project: Path, value: Path) -> str | None:
    """Why `value` is not a plain relative path to a directory inside `project`, or None."""
    if value.is_absolute() or value.anchor:
        return "an absolute path; name a directory inside the project, relative to its pyproject.toml"
    here = project
    for part in value.parts:
        if part == "..":
            return "it leaves the project (`..`)"
        if part != part.rstrip(". ") or part != part.lstrip(" "):
            return "a path part that begins or ends with a space or ends with a dot names another directory"
        here = here / part
        if here.is_symlink():
            return f"{here.relative_to(project)} is a symbolic link; name the directory itself"
    if not (project / value).resolve().is_relative_to(project.resolve()):
        return "it resolves outside the project"
    return None


def _refuse_misleading_out(config: Path, project: Path, out: Path) -> None:
    """An `out` that displays as another path would let a pull request point `check` at a
    look-alike copy (`genеrated`, Cyrillic е) while the real `generated/` is edited: a part that
    hides characters or mixes scripts is refused, and so is one that looks like another entry
    of its directory."""
    here = project
    for part in out.parts:
        if part in (out.anchor, ".", ".."):
            here = here / part
            continue
        why = lookalike.problem(part)
        if why is None and here.is_dir():
            look = lookalike.skeleton(part).casefold()
            others = (name for name in os.listdir(here) if name != part)
            why = next(
                (
                    f"looks like {lookalike.escaped(name)!r} beside it"
                    for name in others
                    if lookalike.skeleton(name).casefold() == look
                ),
                None,
            )
        if why is not None:
            raise ConfigFileError(f"{config}: [tool.orlgen] out: {lookalike.escaped(part)!r} refused: {why}")
        here = here / part


def find_config(start: Path | None = None) -> tuple[Path, Config]:
    """The project `start` belongs to (its nearest `pyproject.toml` above), else the working
    directory's: its directory and config.

    A `pyproject.toml` inside the output directory of a project above it is refused, not
    honoured: a pull request could otherwise give `orlgen check generated` its own templates
    and mixtures without touching the project's own config."""
    found = _pyprojects_above(start.resolve()) if start is not None else []
    if found:
        project, outers = found[0], found[1:]
    else:
        project, outers = Path("."), [d for d in _pyprojects_above(Path.cwd()) if d != Path.cwd()]
    if (project / PYPROJECT).is_file():
        for outer in outers:
            out = _declared_out(outer)
            if out is not None and project.resolve().is_relative_to(out):
                raise ConfigFileError(
                    f"{project / PYPROJECT}: refused: it is inside the output directory of {outer / PYPROJECT}, "
                    "whose config is the only one orlgen reads there"
                )
    return project, load_config(project)


def _pyprojects_above(directory: Path) -> list[Path]:
    return [here for here in [directory, *directory.parents] if (here / PYPROJECT).is_file()]


def _declared_out(project: Path) -> Path | None:
    """The output directory an enclosing project declares (default `generated`), read leniently:
    an unrelated or broken `pyproject.toml` above the project is not this command's business."""
    try:
        tool = tomllib.loads((project / PYPROJECT).read_text(encoding="utf-8")).get("tool", {})
        out = tool.get("orlgen", {}).get("out", "generated")
    except (OSError, ValueError, AttributeError):
        return None
    return (project / out).resolve() if isinstance(out, str) else None
