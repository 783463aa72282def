"""What `orlgen eval` evaluates: the environments of a generated module, a mixture module, or a
snapshot rendered in memory by the same pipeline `orlgen generate` uses (nothing is written)."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import EvalError


@dataclass(frozen=True)
class Member:
    """One environment of the subject: its adapter class and its module's dataset and rewards."""

    name: str
    adapter: type
    module: ModuleType

    @property
    def secret_names(self) -> tuple[str, ...]:
        """The environment variables the adapter sends as secrets (its snapshot's names)."""
        return tuple(self.adapter.spec.secret_names)  # type: ignore[attr-defined]

    @property
    def splits(self) -> dict[str, int]:
        return dict(self.module.SPLITS)

    def rows(self, split: str, num_tasks: int | None) -> list[dict[str, Any]]:
        """The first `num_tasks` dataset rows of `split` (all when None), as TRL hands them to `reset`
        (`build_dataset`'s rows, read without importing `datasets` where they need no Arrow).
        More tasks than the split has is the error `build_dataset` makes of it, for training too:
        one rule, so an eval never scores fewer tasks than it was asked for."""
        from orlgen.runtime import DatasetError
        from orlgen.runtime.surface import task_rows

        if split not in self.splits:
            raise EvalError(f"{self.name} has no split {split!r} (it has {', '.join(sorted(self.splits))})")
        try:
            return task_rows(self.adapter.spec, split, num_tasks)  # type: ignore[attr-defined]
        except DatasetError as exc:
            raise EvalError(f"{self.name}: {exc}") from exc

    def reward_funcs(self) -> list[Any]:
        """The module's `reward_funcs`, as training passes them to the trainer (fresh each time)."""
        return list(self.module.reward_funcs)


_counter = itertools.count()


def load(spec: str, env: str | None = None) -> list[Member]:
    """The environments of `spec` (a module file, a dotted module name, or a snapshot file),
    restricted to the one named `env` when given."""
    module = _import(spec)
    members = _members(module, spec)
    if env is None:
        return members
    chosen = [member for member in members if member.name == env]
    if not chosen:
        raise EvalError(f"{spec} has no environment {env!r} (it has {', '.join(m.name for m in members)})")
    return chosen


def _import(spec: str) -> ModuleType:
    path = Path(spec)
    if spec.endswith(".snapshot.json"):
        return _from_snapshot(path)
    if spec.endswith(".py"):
        if not path.is_file():
            raise EvalError(f"{spec}: no such file")
        return _from_file(path)
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise EvalError(f"cannot import {spec!r}: {exc}") from exc


def _from_file(path: Path) -> ModuleType:
    """Import a module file: by its dotted name when it lies under the current directory (so a
    mixture's `from . import echo` works), else under a fresh private name."""
    resolved = path.resolve()
    try:
        parts = resolved.with_suffix("").relative_to(Path.cwd().resolve()).parts
    except ValueError:
        parts = ()
    if parts and all(part.isidentifier() for part in parts):
        if "" not in sys.path and str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))
        with _import_errors(path):
            return importlib.import_module(".".join(parts))
    name = f"orlgen_eval_subject_{next(_counter)}"
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise EvalError(f"{path}: not an importable module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    with _import_errors(path):
        module_spec.loader.exec_module(module)
    return module


def _from_snapshot(path: Path) -> ModuleType:
    """Render the snapshot's module in memory (verified, as `generate` does) and import it as if
    it stood next to the snapshot, where its dataset builder looks for the stored tasks."""
    from orlgen.render.jobs import module_path
    from orlgen.snapshot.model import load as load_snapshot

    from ..project import Project

    if not path.is_file():
        raise EvalError(f"{path}: no such file")
    snapshot = load_snapshot(path)
    target = module_path(path, snapshot)
    source = Project.find([path]).generation([path]).files[target]
    name = f"orlgen_eval_{snapshot.name}_{next(_counter)}"
    module = ModuleType(name)
    module.__file__ = str(target)
    sys.modules[name] = module
    with _import_errors(path):
        exec(compile(source, str(target), "exec"), module.__dict__)
    return module


@contextmanager
def _import_errors(path: Path) -> Iterator[None]:
    """A module that fails on import, however it fails, is one line."""
    try:
        yield
    except Exception as exc:
        raise EvalError(f"cannot import {path}: {type(exc).__name__}: {exc}".splitlines()[0]) from exc


def _members(module: ModuleType, spec: str) -> list[Member]:
    """A mixture lists its environments in `environments`; a module has one `environment_factory`."""
    environments = getattr(module, "environments", None)
    if isinstance(environments, dict):
        return [Member(name, cls, sys.modules[cls.__module__]) for name, cls in environments.items()]
    factory = getattr(module, "environment_factory", None)
    if not isinstance(factory, type) or not hasattr(module, "build_dataset"):
        raise EvalError(f"{spec} is not a module generated by orlgen (no environment_factory)")
    return [Member(Path(module.__file__ or spec).stem, factory, module)]
