"""ModulePlan → formatted Python source, and snapshots → FileMap.

`generate` is pure: the same snapshots, templates and pinned tool versions give the same bytes,
whatever the working directory, hash seed or the user's formatter configuration. It is shared
by `orlgen generate` (which writes the FileMap) and `orlgen check` (which compares it).
"""

from __future__ import annotations

import ast
import functools
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from orlgen import __version__, lookalike
from orlgen.disk import FileMap
from orlgen.errors import OrlgenError, RefusedWrite
from orlgen.names import check_name
from orlgen.plan.planner import ModulePlan, plan, plan_mixture
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import docstring_literal, literal
from orlgen.render import header, sandbox
from orlgen.render.models import IMPORT_MARKER, MODELS_IMPORTS, models, with_imports
from orlgen.render.numeric import allow_numeric_unions
from orlgen.runtime.contract import CONTRACTS
from orlgen.schema import SchemaError, printable
from orlgen.snapshot.model import Snapshot
from orlgen.trainers import DEFAULT_TRAINERS, ExtraFile, Trainer, plugin_digest, trainer

_T = TypeVar("_T")
LINE_LENGTH = 100
# Bumped whenever the structure handed to templates changes, so override authors can tell.
TEMPLATE_CONTEXT_VERSION = 5
# `<env>_models.py`: an env rendered for several trainers keeps its params models and SPEC there, once.
MODELS_SUFFIX = "_models"
MODELS_TEMPLATE = "models.py.jinja"


class RenderError(OrlgenError):
    """A snapshot cannot be turned into a module; the message names the tool or field."""


def module_path(snapshot_path: Path, snapshot: Snapshot, suffix: str = "") -> Path:
    """`<name><suffix>.py` next to `<name>.snapshot.json` (the suffix is a trainer's: "" for
    TRL, `_verifiers`, ...). The name is a validated identifier and must match the file's own
    name, so a snapshot cannot aim its module at another env's file or at a package file such as
    `__init__.py`."""
    check_name(snapshot.name, f"{snapshot_path}: module name")
    if snapshot_path.name != snapshot.file_name:
        raise RefusedWrite(f"{snapshot_path}: records the name {snapshot.name!r}: rename the file {snapshot.file_name}")
    return snapshot_path.with_name(f"{snapshot.name}{suffix}.py")


Trainers = Mapping[str, Sequence[str]]
"""An env's module name → the names of the trainers it is rendered for (absent: `DEFAULT_TRAINERS`)."""


@dataclass(frozen=True)
class Job:
    """One generated file: where it goes, what it is rendered from (its kind, the trainer, its
    name and the sha256 of each snapshot, which determine the snapshot content it reads), and how
    to render it. `check` renders every job and compares bytes; `inputs` keys its optional cache."""

    path: Path
    inputs: tuple[str, ...]
    render: Callable[[], str]


def jobs(
    snapshots: Iterable[tuple[Path, Snapshot]],
    templates: Path | None = None,
    mixtures: Mapping[str, Sequence[str]] | None = None,
    trainers: Trainers | None = None,
    weights: Mapping[str, Mapping[str, float]] | None = None,
) -> list[Job]:
    """The files these snapshots generate: one module per (env, trainer), and each mixture once
    per trainer that renders mixtures and all its members are rendered for.

    `templates` is a project directory whose templates override the packaged ones by name.
    `mixtures` maps a mixture module's name to the names of its members; a mixture is rendered
    when all its members are among `snapshots`, next to the first of them; `weights` maps a
    mixture's name to its sampling weights by member (recorded in its module). Two jobs that would
    write one path (an env named `helpdesk_verifiers` beside the verifiers module of `helpdesk`)
    are refused, naming both.
    """
    snapshots = list(snapshots)
    chosen = {
        snapshot.name: _trainers((trainers or {}).get(snapshot.name, DEFAULT_TRAINERS)) for _, snapshot in snapshots
    }
    found = [job for path, snapshot in snapshots for job in _env_jobs(path, snapshot, chosen[snapshot.name], templates)]
    by_name = {snapshot.name: (path, snapshot) for path, snapshot in snapshots}
    for name, members in sorted((mixtures or {}).items()):
        check_name(name, "mixture name")
        if name in by_name:
            raise RefusedWrite(f"mixture name {name!r} refused: it is the name of an environment's module")
        if all(member in by_name for member in members):
            shares = (weights or {}).get(name)
            found += _mixture_jobs(name, [by_name[member] for member in sorted(members)], chosen, templates, shares)
    _refuse_shared_paths(found)
    return found


def _env_jobs(path: Path, snapshot: Snapshot, chosen: tuple[Trainer, ...], templates: Path | None) -> list[Job]:
    """One env's files: a module per trainer and, for several trainers, the models file they
    share (after them). The plan and the models are computed once, by the first of them
    rendered, and handed to the others. A module that imports the shared file says so in its
    cache inputs: the same snapshot renders other bytes when it keeps its models inline."""
    planned = PlannedEnv(snapshot)
    shared = len(chosen) > 1
    found = [
        Job(
            module_path(path, snapshot, each.suffix),
            ("module", each.name, snapshot.name, snapshot.sha256, *((MODELS_SUFFIX,) if shared else ()), *_code(each)),
            functools.partial(render_module, snapshot, templates, each.name, shared, planned),
        )
        for each in chosen
    ]
    found += [
        Job(
            extra_path(path, snapshot, extra),
            ("file", each.name, snapshot.name, snapshot.sha256, extra.suffix, *_code(each)),
            functools.partial(render_extra, snapshot, each.name, extra, planned),
        )
        for each in chosen
        for extra in each.extra_files
    ]
    if shared:
        found.append(
            Job(
                module_path(path, snapshot, MODELS_SUFFIX),
                ("module", "models", snapshot.name, snapshot.sha256),
                functools.partial(render_models, snapshot, templates, planned),
            )
        )
    return found


def _code(chosen: Trainer) -> tuple[str, ...]:
    """A plugin's part of a job's cache inputs: its distribution, version, code and templates
    (a built-in's are in the cache's digest of orlgen itself)."""
    return () if chosen.plugin is None else (plugin_digest(chosen.name),)


def extra_path(snapshot_path: Path, snapshot: Snapshot, extra: ExtraFile) -> Path:
    """`<name><suffix>` (e.g. `helpdesk_verl_tools.yaml`) beside the env's modules."""
    return module_path(snapshot_path, snapshot).with_name(f"{snapshot.name}{extra.suffix}")


def render_extra(snapshot: Snapshot, trainer_name: str, extra: ExtraFile, planned: PlannedEnv | None = None) -> str:
    """A trainer's file beside its module: the module's header (as comment lines, which YAML
    shares with Python), then its body from the plan."""
    chosen = trainer(trainer_name)
    module_plan = (planned or PlannedEnv(snapshot)).planned[0]
    body = _plugin_call(chosen, "its file " + extra.suffix, extra.body, module_plan, chosen.module_name(snapshot.name))
    return _header(snapshot.file_name, snapshot.sha256, chosen) + body


def _header(sources: str, sha256: str, chosen: Trainer) -> str:
    return header.write(header.current(sources, sha256, chosen.name, chosen.written_for, chosen.plugin))


def _plugin_call(chosen: Trainer, what: str, call: Callable[..., _T], *args: object) -> _T:
    """Call a trainer's own code; a plugin's failure is one line naming the plugin (a
    built-in's is orlgen's bug, and keeps its traceback)."""
    if chosen.plugin is None:
        return call(*args)
    try:
        return call(*args)
    except Exception as exc:
        raise RenderError(
            f"trainer plugin {chosen.name!r} ({chosen.plugin}): {what} failed: {type(exc).__name__}: "
            f"{printable(str(exc))}"
        ) from None


class PlannedEnv:
    """One env's neutral plan and its datamodel-code-generator models, computed on first use and
    shared by every file of the env (sqlc builds its request once): three trainers cost one plan
    and one dcg call, not three."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    @functools.cached_property
    def planned(self) -> tuple[ModulePlan, list[ast.stmt], str]:
        """(the plan, the models' imports, the models' classes); a schema dcg cannot model is
        one line naming the snapshot."""
        try:
            module_plan = plan(self.snapshot)
            imports, model_classes = models(module_plan)
        except SchemaError as exc:
            raise RenderError(f"{self.snapshot.file_name}: {exc}") from exc
        return module_plan, imports, model_classes


def _trainers(names: Sequence[str]) -> tuple[Trainer, ...]:
    return tuple(trainer(name) for name in dict.fromkeys(names))


def _mixture_jobs(
    name: str,
    members: list[tuple[Path, Snapshot]],
    chosen: Mapping[str, tuple[Trainer, ...]],
    templates: Path | None,
    weights: Mapping[str, float] | None = None,
) -> list[Job]:
    """The mixture's module for each trainer every member is rendered for, if it renders mixtures."""
    snapshots = [snapshot for _, snapshot in members]
    common = [each for each in chosen[snapshots[0].name] if all(each in chosen[s.name] for s in snapshots)]
    return [
        Job(
            members[0][0].with_name(f"{name}{each.suffix}.py"),
            ("mixture", each.name, name, *(snapshot.sha256 for snapshot in snapshots), *_code(each))
            + ((f"weights {sorted(weights.items())!r}",) if weights else ()),
            functools.partial(render_mixture, name, snapshots, templates, each.name, weights),
        )
        for each in common
        if each.mixture_template is not None
    ]


def _refuse_shared_paths(found: list[Job]) -> None:
    seen: dict[Path, Job] = {}
    for job in found:
        other = seen.setdefault(job.path, job)
        if other is not job:
            raise RefusedWrite(
                f"{job.path}: refused: both {_what(other)} and {_what(job)} would be written there; "
                "rename an env (`--name`) or the mixture"
            )


def _what(job: Job) -> str:
    """`the verifiers module of helpdesk`, `the trl mixture support_mix`."""
    kind, trainer_name, name = job.inputs[:3]
    if trainer_name == "models":
        return f"the models file of {name}"
    if kind == "file":
        return f"the {trainer_name} file {job.path.name} of {name}"
    return f"the {trainer_name} {kind} {name}" if kind == "mixture" else f"the {trainer_name} module of {name}"


def generate(
    snapshots: Iterable[tuple[Path, Snapshot]],
    templates: Path | None = None,
    mixtures: Mapping[str, Sequence[str]] | None = None,
    trainers: Trainers | None = None,
    weights: Mapping[str, Mapping[str, float]] | None = None,
) -> FileMap:
    """Every generated file for these snapshots: path → bytes."""
    return {job.path: job.render().encode() for job in jobs(snapshots, templates, mixtures, trainers, weights)}


def render_module(
    snapshot: Snapshot,
    templates: Path | None = None,
    trainer_name: str = "trl",
    shared: bool = False,
    planned: PlannedEnv | None = None,
) -> str:
    """One trainer's module of a snapshot: the neutral plan, the models (inline, or with `shared`
    bound from the env's models file), the trainer's context and template, the imports it uses,
    black. `planned` is the env's plan when another file of the env computed it already."""
    chosen = trainer(trainer_name)
    module_plan, imports, model_classes = (planned or PlannedEnv(snapshot)).planned
    models_module = f"{snapshot.name}{MODELS_SUFFIX}" if shared else None
    context = {
        **_plugin_call(chosen, "its context", chosen.context, module_plan),
        **_models_context(module_plan, model_classes, models_module),
    }
    body = _render(templates, chosen, chosen.module_template, context)
    body = allow_numeric_unions(with_imports(body, [] if shared else imports, chosen.imports))
    return _header(snapshot.file_name, snapshot.sha256, chosen) + _format(body)


def render_models(snapshot: Snapshot, templates: Path | None = None, planned: PlannedEnv | None = None) -> str:
    """An env's models file (`<env>_models.py`): its identity, params models and SPEC, which each
    of its trainers' modules binds from it instead of holding a copy."""
    module_plan, imports, model_classes = (planned or PlannedEnv(snapshot)).planned
    shared_by = trainer("trl")  # the models file is rendered from orlgen's own templates, TRL's folder
    description = (
        f"Params models and SPEC of the ORS environment {module_plan.target_value!r}, shared by its trainers'\n"
        f"modules ({snapshot.name}*.py beside this file), so a schema change is one hunk here.\n\n{module_plan.facts}"
    )
    exported = ["SNAPSHOT_SHA256", "SPEC", "SPLITS", "TARGET", *_params_classes(module_plan)]
    context = {
        **_models_context(module_plan, model_classes, None),
        "plan": module_plan,
        "description": docstring_literal(description, ""),
        "exports": literal(dunder_all_order(exported)),
    }
    body = _render(templates, shared_by, MODELS_TEMPLATE, context)
    body = allow_numeric_unions(with_imports(body, imports, MODELS_IMPORTS))
    return header.write(header.models(snapshot.file_name, snapshot.sha256)) + _format(body)


def _models_context(module_plan: ModulePlan, model_classes: str, models_module: str | None) -> dict[str, object]:
    """What `env_models.py.jinja` reads: the models inline, or the shared file's name and the
    params classes a module binds from it."""
    return {
        "imports": IMPORT_MARKER,
        "models": model_classes,
        "models_module": models_module,
        "models_literal": literal(models_module),
        "model_names": _params_classes(module_plan),
    }


def _params_classes(module_plan: ModulePlan) -> list[str]:
    return [tool.params_class for tool in module_plan.tools if tool.params_class]


def render_mixture(
    name: str,
    snapshots: list[Snapshot],
    templates: Path | None = None,
    trainer_name: str = "trl",
    weights: Mapping[str, float] | None = None,
) -> str:
    """One trainer's mixture module (only for a trainer whose `mixture_template` is set)."""
    chosen = trainer(trainer_name)
    if chosen.mixture_template is None:
        raise RenderError(f"mixture {name!r}: trainer {chosen.name!r} renders no mixture")
    body = _render(
        templates, chosen, chosen.mixture_template, {"plan": plan_mixture(name, snapshots, dict(weights or {}))}
    )
    sources = ", ".join(snapshot.file_name for snapshot in snapshots)
    combined = hashlib.sha256(" ".join(snapshot.sha256 for snapshot in snapshots).encode()).hexdigest()
    return _header(sources, combined, chosen) + _format(body)


def _format(source: str) -> str:
    """black with a pinned mode: independent of any `[tool.black]` the user has; invisible
    characters of server text escaped first (`lookalike.visible_source`), so the module
    displays what it holds."""
    import black

    try:
        source = lookalike.visible_source(source)
    except ValueError as exc:
        raise RenderError(f"refused to write a module that displays other text than it holds: {exc}") from exc
    try:
        return black.format_str(
            source, mode=black.Mode(target_versions={black.TargetVersion.PY311}, line_length=LINE_LENGTH)
        )
    except black.InvalidInput as exc:
        raise RenderError(f"black cannot format the rendered module: {printable(str(exc))}") from None


def template_dirs(overrides: Path | None, chosen: Trainer) -> tuple[Path, ...]:
    """Where a trainer's templates are looked up, first match wins: the project's overrides, the
    trainer's own, then orlgen's own (TRL's), whose partials every module includes
    (`contract.py.jinja`, `env_spec.py.jinja`)."""
    shared = trainer("trl").templates
    own = (chosen.templates,) if chosen.templates == shared else (chosen.templates, shared)
    return own if overrides is None else (overrides, *own)


def _render(overrides: Path | None, chosen: Trainer, name: str, context: dict[str, object]) -> str:
    """A template rendered in the sandbox (`orlgen.render.sandbox`): the context becomes plain
    values, and what it renders must be Python, or the error names the template, not a
    traceback from the formatter."""
    common = {
        "context_version": TEMPLATE_CONTEXT_VERSION,
        "contract": CONTRACTS.get(chosen.name),
        "trainer": chosen.name,
        "generated_by": __version__,
    }
    directories = template_dirs(overrides, chosen)
    source = sandbox.render(directories, name, {**common, **context})
    try:
        ast.parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: a null byte
        where = next((directory / name for directory in directories if (directory / name).is_file()), name)
        line = getattr(exc, "lineno", None)
        raise RenderError(
            f"{where}: its output is not Python (line {line} of the rendered module: {printable(str(exc))})"
        ) from None
    return source
