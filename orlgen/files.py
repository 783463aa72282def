"""FileMap: the pipeline's output, and the only code that touches the output directory.

`generate` writes a FileMap and `check` compares one with the disk; both get it from the same
pure render, so they cannot disagree about what the files should hold.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

FileMap = dict[Path, bytes]


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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_files(files: FileMap) -> list[Path]:
    """Write every file whose bytes differ from the disk; return the paths written."""
    written = []
    for path, data in sorted(files.items()):
        if not path.exists() or path.read_bytes() != data:
            write_atomic(path, data)
            written.append(path)
    return written
