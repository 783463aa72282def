"""Trainers: one template set (and, in the runtime, one thin shim) per training framework, all
rendering the same trainer-neutral plan (`orlgen.plan.planner.ModulePlan`).

A trainer is plain data (`Trainer`): its name (the config value, the header's word, part of the
render cache key), the suffix of its module's file name, the version range of the framework it
was written for, its templates and the function that builds its template context from the plan.
`trainer(name)` imports `orlgen.trainers.<name>` only when asked for it, so rendering the TRL
module never imports another trainer's code.

Beside what `context` returns, every module template gets `imports` (the import block's marker)
and `models` (datamodel-code-generator's params models).

Template names are unique across trainers: a project's templates directory overrides them by
name, in one flat directory (`module.py.jinja` is TRL's; another trainer prefixes its own, e.g.
`verifiers_module.py.jinja`).

`__all__` names what other packages import from here (a test holds every import from outside to
it); each trainer's own package is reached through `trainer(name)`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from orlgen.errors import OrlgenError

if TYPE_CHECKING:  # the config reads the names; it need not import the plan
    from orlgen.plan.planner import ModulePlan

__all__ = ["DEFAULT_TRAINERS", "TRAINER_NAMES", "ExtraFile", "Trainer", "module_suffix", "trainer"]

TrainerName = Literal["trl", "verifiers", "skyrl", "agent", "verl"]
TRAINER_NAMES: tuple[str, ...] = get_args(TrainerName)
DEFAULT_TRAINERS: tuple[str, ...] = ("trl",)  # an env's trainers when the config names none


class UnknownTrainer(OrlgenError):
    """A trainer name orlgen does not know, or one whose package is not built yet."""


@dataclass(frozen=True)
class ExtraFile:
    """A file a trainer writes beside its module that is not Python (verl's tool config): its
    name's suffix after the env's name, and its body from the plan and the module's name (the
    header is added by the renderer, as a comment)."""

    suffix: str  # e.g. "_verl_tools.yaml" -> helpdesk_verl_tools.yaml
    body: Callable[[ModulePlan, str], str]


@dataclass(frozen=True)
class Trainer:
    name: str  # "trl" | "verifiers" | "skyrl" | "agent" | "verl": the config value, in the header, in the cache key
    suffix: str  # file name suffix, `module_suffix(name)`: "" -> helpdesk.py, "_verifiers" -> helpdesk_verifiers.py
    written_for: str  # the version range named in the header, e.g. "trl>=1.16,<2"
    templates: Path  # this trainer's folder of jinja templates (beside its code)
    module_template: str  # e.g. "module.py.jinja"
    mixture_template: str | None  # None: this trainer renders no mixture (its docstring says why)
    context: Callable[[ModulePlan], dict[str, object]]  # the template context, from the neutral plan
    imports: Mapping[str, tuple[str, ...]]  # what its templates may import, by module (`render.models`)
    extra_files: tuple[ExtraFile, ...] = ()  # files it writes beside its module

    def module_name(self, env: str) -> str:
        """The module's name for an env of that name: `helpdesk`, `helpdesk_verifiers`."""
        return f"{env}{self.suffix}"


def module_suffix(name: str) -> str:
    """A trainer's file name suffix, known without importing it: "" for TRL (today's
    `helpdesk.py`), `_<name>` for the others (`helpdesk_verifiers.py`). `Trainer.suffix` is this."""
    return "" if name == "trl" else f"_{name}"


def trainer(name: str) -> Trainer:
    """The trainer of that name; an unknown name is one line listing the valid ones."""
    if name not in TRAINER_NAMES:
        raise UnknownTrainer(f"unknown trainer {name!r}: expected one of {', '.join(TRAINER_NAMES)}")
    found = importlib.import_module(f"orlgen.trainers.{name}").TRAINER
    assert isinstance(found, Trainer) and found.suffix == module_suffix(name)
    return found
