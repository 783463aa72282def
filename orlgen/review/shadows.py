"""Whatever `import <out>.<module>` could find instead of the output directory.

The output directory is a namespace package, and a namespace portion loses to any module or
regular package of its name anywhere on `sys.path`: a `generated.py` (or a sourceless
`generated.pyc`) at the repository root, on a later path entry (`examples/generated.py`, when a
script in `examples/` runs), or in `tests/` (which pytest puts first on `sys.path`) wins, and
with `__path__` set, `generated.echo` still imports, from elsewhere. An earlier directory named
like the output directory (`tests/generated/`) is searched first even as a namespace portion.

So `check` proves the output directory is what the import resolves to: it scans every folder
of the project (those a script, pytest or a `PYTHONPATH=...` can put on `sys.path`; hidden
folders, virtualenvs and caches aside) for anything named like the output directory that Python
can import, and every entry of this interpreter's `sys.path` (the environment a training job
runs in, which comes after the project's own folder) for a module or a regular package of that
name, which wins from anywhere; each is a problem. Which `sys.path` another interpreter has is
beyond it.

A folder is set aside by its name or its `pyvenv.cfg` only when git tracks no file in it: a pull
request can add any name and any `pyvenv.cfg`, but only as tracked files, so a committed
`tests/pyvenv.cfg` cannot hide `tests/generated.py`, while a real virtualenv or cache (never
committed) is still left alone. Outside a git work tree nothing tells the two apart, and the
names alone decide.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from orlgen.review.layout import Problem

_MODULE_SUFFIXES = tuple(sorted({".py", ".pyw", ".pyc", ".pyi", *EXTENSION_SUFFIXES}))
_SKIPPED = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})
_MAX_FOLDERS = 20_000  # a project's folders; past this the scan stops and says so
_GIT_SECONDS = 60  # `git ls-files` of a large repository takes well under a second
_SHADOW = (
    "named like the output directory: `import {name}.<module>` can find it instead of {out} "
    "(from an earlier sys.path entry, or anywhere on sys.path over a namespace package); rename or remove it"
)


def shadows(root: Path, out: Path) -> list[Problem]:
    """Every importable file or folder, in the project or on `sys.path`, that competes with `out`
    for its import name (the output directory's own name)."""
    name = out.name
    if not name.isidentifier():
        return []
    own, base = out.resolve(), root.resolve()
    folders = list(_project_folders(base, own, _tracked_folders(base)))
    found = [path for folder in folders for path in _competitors(folder, name, own, portions=True)]
    outside = [Path(entry).resolve() for entry in sys.path if entry and os.path.isabs(entry)]
    seen = set(folders)
    found += [
        path for folder in outside if folder not in seen for path in _competitors(folder, name, own, portions=False)
    ]
    shown = sorted({root / path.relative_to(base) if path.is_relative_to(base) else path for path in found})
    problems = [Problem(path, _SHADOW.format(name=name, out=out)) for path in shown]
    if len(folders) >= _MAX_FOLDERS:
        problems.append(Problem(root, f"more than {_MAX_FOLDERS} folders: the scan for modules named {name!r} stopped"))
    return problems


def _project_folders(root: Path, own: Path, tracked: frozenset[Path] | None) -> Iterator[Path]:
    """The project's folders, breadth first: not the output directory itself (its own plan is
    `layout`'s), no symbolic link, and not hidden ones (`.git`, `.venv`), virtualenvs or caches
    unless git tracks a file in them (`tracked`; None outside a git work tree)."""
    queue = [root]
    count = 0
    while queue and count < _MAX_FOLDERS:
        folder = queue.pop(0)
        count += 1
        yield folder
        try:
            entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False) and not _skipped(entry.name, path, own, tracked):
                queue.append(path)


def _skipped(name: str, path: Path, own: Path, tracked: frozenset[Path] | None) -> bool:
    if path == own:
        return True
    if tracked is not None and path in tracked:
        return False  # the repository's own files: a pull request chose this name or pyvenv.cfg
    return name.startswith(".") or name in _SKIPPED or (path / "pyvenv.cfg").exists()


def _tracked_folders(root: Path) -> frozenset[Path] | None:
    """Every folder under `root` that holds a file git tracks (at any depth), or None when `root`
    is not in a git work tree or git cannot say. One `git ls-files`, with the file system
    monitor off: no command a local git config names runs for this read."""
    try:
        listed = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "ls-files", "-z"],
            cwd=root,
            capture_output=True,
            timeout=_GIT_SECONDS,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    relative = {folder for name in filter(None, listed.split(b"\0")) for folder in Path(os.fsdecode(name)).parents}
    return frozenset(root / folder for folder in relative)


def _competitors(folder: Path, name: str, own: Path, portions: bool) -> Iterator[Path]:
    """The entries of `folder` Python could import as `name`: a module file of any suffix, a
    package folder of that name, and with `portions` any folder of that name (a namespace portion
    is searched first when its path entry comes first, as a project folder can: `tests/`)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name == name and path.resolve() != own and (entry.is_dir() or entry.is_symlink()):
            if portions or any(path.glob("__init__.*")):
                yield path
        elif entry.name.startswith(name) and entry.name[len(name) :] in _MODULE_SUFFIXES:
            yield path
