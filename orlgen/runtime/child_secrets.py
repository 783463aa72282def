"""Secrets for a child process that does not inherit them: the values of named environment
variables, written to a private file the child is told about, which it reads back into its own
environment.

Why: verifiers 0.4's subprocess runtime starts each rollout's tool server with the host's
environment minus every variable whose name contains `API_KEY` (`verifiers/v1/runtimes/
subprocess.py:104`), so the harness's agent program, which the same runtime starts, cannot read the
model's keys; the explicit environment a tool server is given holds only verifiers' own variables.
A session whose env needs `JUDGE_API_KEY` could therefore never open. The file is the one channel
that reaches the tool server alone: its path rides in the tool server's config (`VF_CONFIG`,
a variable verifiers keeps), which no other process is given.

Why a file and not renamed variables: a variable the host renames to pass the filter is
inherited by every process verifiers starts, the agent program and the tools the model runs
included, which is what the filter is there to prevent. The file is readable by its owner only
(mode 0600, in a directory of mode 0700 made by `tempfile.mkdtemp`, under `XDG_RUNTIME_DIR`, a
per-user tmpfs, when there is one); the same user can read the host's own environment
(`/proc/<pid>/environ`) anyway, so the file exposes the values to no one who could not read them
already. One file per process and set of values, shared by every tool server the process
starts; the directory is removed when the process that made it exits (`atexit`; a SIGKILLed host
leaves it, still 0700). Values are never logged: a missing file is said by its path.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable

from . import process

logger = logging.getLogger("orlgen")

__all__ = ["restore", "write"]

# (names, values) written → the file's path, and the directory holding them, in this process.
_files: dict[frozenset[tuple[str, str]], str] = process.per_process({})
_made: list[str] = process.per_process([])  # the private directory, once made
_lock = process.lock()


def write(names: Iterable[str]) -> str | None:
    """The path of a private file holding the values of the environment variables `names` that
    are set, written at the first ask of these values in this process; None when none is set."""
    found = {name: os.environ[name] for name in sorted(set(names)) if os.environ.get(name)}
    if not found:
        return None
    key = frozenset(found.items())
    with _lock:
        if key not in _files:
            _files[key] = _write(found)
        return _files[key]


def restore(path: str | None) -> list[str]:
    """In the child: set the variables the file at `path` holds; their names. A file that is gone
    (its writer exited) is one warning line and restores nothing: the session then opens without
    them, as it would with the variables unset."""
    if path is None:
        return []
    try:
        with open(path, encoding="utf-8") as file:
            found = json.load(file)
    except OSError as exc:
        logger.warning("orlgen: the secrets file %s cannot be read (%s): no secret restored", path, exc.strerror)
        return []
    os.environ.update({str(name): str(value) for name, value in found.items()})
    return sorted(found)


def _write(found: dict[str, str]) -> str:
    """`found` as JSON in a new 0600 file of this process's private directory, complete before its
    name exists (written under a temporary name, then renamed)."""
    if not _made:
        _made.append(tempfile.mkdtemp(prefix="orlgen-secrets-", dir=_private_root()))
        atexit.register(_remove, _made[0], os.getpid())
    directory = _made[0]
    fd, partial = tempfile.mkstemp(dir=directory, suffix=".partial")  # mode 0600
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(found, file)
    path = partial.removesuffix(".partial") + ".json"
    os.replace(partial, path)
    return path


def _private_root() -> str | None:
    """`XDG_RUNTIME_DIR` (a per-user tmpfs, 0700) when it is a directory we own, else the default
    temporary directory (None)."""
    root = os.environ.get("XDG_RUNTIME_DIR")
    try:
        return root if root and os.stat(root).st_uid == os.getuid() else None
    except OSError:
        return None


def _remove(directory: str, owner: int) -> None:
    """At exit of the process that made `directory` (a forked child inherits the hook, not the
    directory)."""
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)
