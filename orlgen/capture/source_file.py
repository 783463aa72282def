"""A capture target that is a Python file (`orlgen snapshot envs/calc.py`): never a catalog name
sent to the network, never imported; read with `ast` to say which `module:EnvClass` to give."""

from __future__ import annotations

import ast
import os
from pathlib import Path

from orlgen.errors import CaptureError
from orlgen.lookalike import escaped


def looks_like_a_file(target: str) -> bool:
    """A `.py` name, or a file that exists: `envs/calc.py` matches the catalog form
    (`Owner/Env`) too, and must not reach the platform as one."""
    return target.endswith(".py") or (os.sep in target and Path(target).is_file())


def refuse_file(target: str) -> CaptureError:
    """The error for a file given as a target, naming the `module:EnvClass` targets it defines."""
    path = Path(target)
    shown = escaped(target)
    if not path.is_file():
        return CaptureError(f"{shown}: no such file; a target is Owner/Env, a URL, or module:EnvClass")
    module = _module_name(path)
    classes = _environment_classes(path)
    if not classes:
        return CaptureError(
            f"{shown} is a file, and defines no Environment subclass: a target is module:EnvClass "
            f"(e.g. {module}:MyEnv), Owner/Env or a URL"
        )
    targets = " or ".join(f"`orlgen snapshot {module}:{name}`" for name in classes)
    return CaptureError(f"{shown} is a file, not a target: capture its environment with {targets}")


def _module_name(path: Path) -> str:
    """The dotted module name `path` has from the working directory (which capture makes
    importable), else its bare name (run orlgen from its directory)."""
    absolute = path.resolve().with_suffix("")
    try:
        parts = absolute.relative_to(Path.cwd().resolve()).parts
    except ValueError:
        parts = (absolute.name,)
    return ".".join(parts)


def _environment_classes(path: Path) -> list[str]:
    """Classes of the file that derive from `Environment` (by that name, or through a class of
    the same file that does), in the order they are defined; the file is parsed, not run."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return []
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_base_name(base) in {"Environment", *found} for base in node.bases):
            found.append(node.name)
    return found


def _base_name(base: ast.expr) -> str | None:
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute):
        return base.attr
    return None
