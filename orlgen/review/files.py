"""The only code that writes or removes files: a FileMap (the pipeline's output) on disk.

`generate` writes a FileMap and `check` compares one with the disk; both get it from the same
pure render, so they cannot disagree about what the files should hold. Every write stays where
it belongs: file names are validated identifiers, and a file orlgen did not write (a module
without its header, a JSON file that is not a snapshot) is never overwritten or removed.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from orlgen.disk import FileMap, write_atomic
from orlgen.errors import RefusedWrite
from orlgen.render import header
from orlgen.snapshot.model import SUFFIX, TASKS_SUFFIX


def is_regular(path: Path) -> bool:
    """A regular file, not a symbolic link: a link committed in place of a generated file could
    make `check` read (and print in its diff) any file on the machine running it, or never
    finish reading (`/dev/zero`)."""
    return not path.is_symlink() and path.is_file()


def is_own(path: Path) -> bool:
    """Whether orlgen may replace the existing file at `path`: a module that starts with the
    generated header, a snapshot (a JSON object with a format version and a hash) or a
    snapshot's tasks file (orlgen owns the name). Never a symbolic link or special file: orlgen
    only writes regular files."""
    if not is_regular(path):
        return False
    if path.name.endswith(SUFFIX):
        return _is_snapshot(path)
    if path.name.endswith(TASKS_SUFFIX):
        return True
    return path.suffix in header.GENERATED_SUFFIXES and header.is_generated(path)


def _is_snapshot(path: Path) -> bool:
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and "format_version" in data and "sha256" in data


def write_files(files: FileMap) -> list[Path]:
    """Write every file whose bytes differ from the disk; return the paths written.

    Refuses the whole batch, before writing anything, when one path holds a file orlgen did not
    write. Modules are written before snapshots and Ctrl-C waits for the batch to finish, so an
    interrupted run never leaves a new snapshot without its module."""
    changed = [path for path in _write_order(files) if not _holds(path, files[path])]
    for path in changed:
        if path.exists() and not is_own(path):
            raise RefusedWrite(f"{path}: refused to overwrite: {_not_own(path)}")
    with _uninterrupted():
        for path in changed:
            write_atomic(path, files[path])
    return changed


def _holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file holding `data`; a link or special file is never read
    (a FIFO would hang, `/dev/zero` never end) and counts as changed, to be refused."""
    return is_regular(path) and path.read_bytes() == data


def remove_files(paths: Iterable[Path]) -> list[Path]:
    """Remove generated modules (orphans); a file without orlgen's header is refused."""
    paths = sorted(paths)
    for path in paths:
        if not is_own(path):
            raise RefusedWrite(f"{path}: refused to remove: {_not_own(path)}")
    with _uninterrupted():
        for path in paths:
            path.unlink()
    return paths


def _not_own(path: Path) -> str:
    if not is_regular(path):
        return "it is not a regular file (a symbolic link or a special file)"
    if path.name.endswith(SUFFIX):
        return "it is not an orlgen snapshot"
    return f"it does not start with orlgen's header ({header.PREFIX!r}), so orlgen did not write it"


def _write_order(files: FileMap) -> list[Path]:
    """Modules first, snapshots last: a snapshot on disk always has its module."""
    return sorted(files, key=lambda path: (path.name.endswith(SUFFIX), path))


@contextmanager
def _uninterrupted() -> Iterator[None]:
    """Hold Ctrl-C until the block is done, then raise it: a batch of writes is all or nothing
    as far as the user's interrupt goes. Signal handlers can only be set in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt
