"""Trainers: one template set (and, in the runtime, one thin shim) per training framework, all
rendering the same trainer-neutral plan (`orlgen.plan.planner.ModulePlan`).

A trainer is plain data (`Trainer`): its name (the config value, the header's word, part of the
render cache key), the suffix of its module's file name, the version range of the framework it
was written for, its templates and the function that builds its template context from the plan.

Trainers are found through the entry-point group `orlgen.trainers` (sqlc and buf run their
generators as plugins over one versioned request; pytest and mkdocs find theirs this way): a
distribution declares `name = "package.module:TRAINER"` and `[tool.orlgen] trainers` may name
it (docs/plugins.md). orlgen's own five are declared there too, but a built-in name always
means orlgen's own module, imported directly: a stale editable install, a source tree on
`PYTHONPATH` or another distribution claiming `trl` never changes which code renders a built-in
module. `trainer(name)` imports a trainer only when asked for it, so rendering the TRL module
never imports another trainer's code, and the entry points are read only for a name that is not
built in.

Beside what `context` returns, every module template gets `imports` (the import block's marker)
and `models` (datamodel-code-generator's params models).

Template names are unique across trainers: a project's templates directory overrides them by
name, in one flat directory (`module.py.jinja` is TRL's; another trainer prefixes its own, e.g.
`verifiers_module.py.jinja`).

`__all__` names what other packages import from here (a test holds every import from outside to
it); each trainer's own package is reached through `trainer(name)`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING

from orlgen.errors import OrlgenError

if TYPE_CHECKING:  # the config reads the names; it need not import the plan
    from orlgen.plan.planner import ModulePlan

__all__ = [
    "DEFAULT_TRAINERS",
    "GROUP",
    "TRAINER_NAMES",
    "ExtraFile",
    "Trainer",
    "known",
    "module_suffix",
    "plugin_digest",
    "trainer",
    "trainer_names",
]

GROUP = "orlgen.trainers"  # the entry-point group plugins register in
TRAINER_NAMES: tuple[str, ...] = ("trl", "verifiers", "skyrl", "agent", "verl")  # the built-in ones
DEFAULT_TRAINERS: tuple[str, ...] = ("trl",)  # an env's trainers when the config names none
# A plugin's name becomes a file name suffix (`_<name>`) and the header's word: lower-case
# identifier characters, not `models` (the env's shared models file, `<env>_models.py`).
_PLUGIN_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
_RESERVED = ("models",)
# What the header's parenthesis can hold: one word, no space or parenthesis (`echo-format>=1,<2`).
_WRITTEN_FOR = re.compile(r"[^()\s;]{1,80}")
# A plugin's extra file: a name beside the env's module, in a language whose comments are `#`.
_EXTRA_SUFFIX = re.compile(r"_[a-z0-9_]{1,40}\.(?:py|yaml)")


class UnknownTrainer(OrlgenError):
    """A trainer name that no built-in or installed plugin has, or a plugin that cannot be loaded."""


@dataclass(frozen=True)
class ExtraFile:
    """A file a trainer writes beside its module that is not Python (verl's tool config): its
    name's suffix after the env's name, and its body from the plan and the module's name (the
    header is added by the renderer, as a comment)."""

    suffix: str  # e.g. "_verl_tools.yaml" -> helpdesk_verl_tools.yaml
    body: Callable[[ModulePlan, str], str]


@dataclass(frozen=True)
class Trainer:
    name: str  # "trl" | "verifiers" | ... | a plugin's name: the config value, in the header, in the cache key
    suffix: str  # file name suffix, `module_suffix(name)`: "" -> helpdesk.py, "_verifiers" -> helpdesk_verifiers.py
    written_for: str  # the version range named in the header, e.g. "trl>=1.16,<2"
    templates: Path  # this trainer's folder of jinja templates (beside its code)
    module_template: str  # e.g. "module.py.jinja"
    mixture_template: str | None  # None: this trainer renders no mixture (its docstring says why)
    context: Callable[[ModulePlan], dict[str, object]]  # the template context, from the neutral plan
    imports: Mapping[str, tuple[str, ...]]  # what its templates may import, by module (`render.models`)
    extra_files: tuple[ExtraFile, ...] = ()  # files it writes beside its module
    # Set by the registry, never by the plugin: "<distribution> <version>" of an installed
    # plugin (named in its files' headers and in orlgen.lock), None for a built-in.
    plugin: str | None = None

    def module_name(self, env: str) -> str:
        """The module's name for an env of that name: `helpdesk`, `helpdesk_verifiers`."""
        return f"{env}{self.suffix}"


def module_suffix(name: str) -> str:
    """A trainer's file name suffix, known without importing it: "" for TRL (today's
    `helpdesk.py`), `_<name>` for the others (`helpdesk_verifiers.py`). `Trainer.suffix` is this."""
    return "" if name == "trl" else f"_{name}"


@lru_cache(maxsize=1)
def _plugins() -> dict[str, tuple[EntryPoint, ...]]:
    """The installed plugins' entry points by name (built-in names left out: they are orlgen's
    own). Read once per process: installing a plugin takes a new process anyway."""
    found: dict[str, tuple[EntryPoint, ...]] = {}
    for point in entry_points(group=GROUP):
        if point.name not in TRAINER_NAMES:
            found[point.name] = (*found.get(point.name, ()), point)
    return found


def trainer_names() -> tuple[str, ...]:
    """Every trainer this installation knows: the built-in ones, then the plugins', sorted."""
    return TRAINER_NAMES + tuple(sorted(_plugins()))


def known(name: str) -> bool:
    """Whether `name` is a trainer this installation can render, without importing any; a
    built-in name is answered without reading the installed entry points."""
    return name in TRAINER_NAMES or name in _plugins()


def trainer(name: str) -> Trainer:
    """The trainer of that name; an unknown name is one line listing the installed ones."""
    if name in TRAINER_NAMES:
        found = importlib.import_module(f"orlgen.trainers.{name}").TRAINER
        assert isinstance(found, Trainer) and found.suffix == module_suffix(name)
        return found
    if name not in _plugins():
        raise UnknownTrainer(f"unknown trainer {name!r}: expected one of {', '.join(trainer_names())}")
    return _plugin(name)


@cache
def _plugin(name: str) -> Trainer:
    """A plugin's `Trainer`, loaded from its entry point and checked: whatever is wrong with it
    is one line naming the distribution, not a traceback from the renderer."""
    points = _plugins()[name]
    where = ", ".join(_distribution(point) for point in points)
    if len(points) > 1:
        raise UnknownTrainer(f"trainer {name!r} is declared by several installed distributions ({where}): keep one")
    (point,) = points
    problem = f"trainer plugin {name!r} ({where}, {point.value})"
    if not _PLUGIN_NAME.fullmatch(name) or name in _RESERVED:
        raise UnknownTrainer(f"{problem}: refused: a trainer's name is lower-case letters, digits and _, not 'models'")
    try:
        found = point.load()
    except Exception as exc:  # an installed plugin's import error is the plugin's
        raise UnknownTrainer(f"{problem}: cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not isinstance(found, Trainer):
        raise UnknownTrainer(f"{problem}: refused: it names a {type(found).__name__}, not an orlgen.trainers.Trainer")
    if (found.name, found.suffix) != (name, module_suffix(name)):
        raise UnknownTrainer(
            f"{problem}: refused: its Trainer says name={found.name!r}, suffix={found.suffix!r}; "
            f"expected {name!r}, {module_suffix(name)!r}"
        )
    if not _WRITTEN_FOR.fullmatch(found.written_for):
        raise UnknownTrainer(f"{problem}: refused: written_for {found.written_for!r} is not one word (e.g. 'echo>=1')")
    for extra in found.extra_files:
        if not _EXTRA_SUFFIX.fullmatch(extra.suffix):
            raise UnknownTrainer(
                f"{problem}: refused: extra file suffix {extra.suffix!r} is not `_<name>.py` or `_<name>.yaml` "
                "(files with orlgen's header as comment lines, beside the env's module)"
            )
    if not found.templates.is_dir():
        raise UnknownTrainer(f"{problem}: refused: its templates folder {found.templates} is not a directory")
    return dataclasses.replace(found, plugin=_distribution(point))


def _distribution(point: EntryPoint) -> str:
    """`<distribution> <version>` of the distribution that declares an entry point."""
    dist = point.dist
    return "an unknown distribution" if dist is None else f"{dist.name} {dist.version}"


@cache
def plugin_digest(name: str) -> str:
    """What decides a plugin's output beside the plan, for the render cache's key: its
    distribution and version, and the bytes of its package's Python files and of its templates
    (an editable plugin changes without a new version)."""
    chosen = _plugin(name)
    digest = hashlib.sha256(f"{chosen.plugin}\n".encode())
    top = importlib.import_module(_plugins()[name][0].module.partition(".")[0])
    # a package: every Python file in it; a single-module plugin: that file alone
    code = [path for root in getattr(top, "__path__", ()) for path in Path(root).rglob("*.py")]
    files = {*(code or [Path(str(top.__file__))]), *chosen.templates.glob("*.jinja")}
    for path in sorted(files):
        data = path.read_bytes()
        digest.update(f"{path.name} {len(data)}\n".encode() + data)
    return digest.hexdigest()
