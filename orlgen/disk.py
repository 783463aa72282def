"""Files on disk, beneath every stage: the pipeline's `FileMap` and the one way orlgen writes a file.

`write_atomic` writes through a temp file and a rename, so a reader (git, `check`, an import)
never sees half a file, and removes the bytecode Python cached for a module it rewrites. The
generator writes FileMaps with it (`review.files`, which decides what may be written); `orlgen
eval` writes its run directory and `orlgen init` the project's config with it. Here rather than
in `review` so that neither needs the renderer to write a file.
"""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path

FileMap = dict[Path, bytes]
"""The pipeline's output: path → bytes. `generate` writes one (`review.files`) and `check` compares one
with the disk; both get it from the same pure render, so they cannot disagree."""


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temp file in the same directory, then rename: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if path.suffix == ".py":
        _forget_bytecode(path)


def _forget_bytecode(source: Path) -> None:
    """Remove the bytecode Python cached for `source` (any interpreter, any optimization level).
    Python trusts a cached file whose recorded size and mtime (in whole seconds) match the
    source, so a module rewritten at the same size within the same second would otherwise run
    its old code on the next import, unlike what `check` reads. A linked `__pycache__` is left
    alone: orlgen removes nothing outside the directories it writes."""
    cache = source.parent / "__pycache__"
    if cache.is_symlink():
        return
    for cached in cache.glob(f"{glob.escape(source.stem)}.*.pyc"):
        cached.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
