"""`python -m bench.release` (run by `make release-check`): what a release weighs. The sdist's and
the wheel's sizes, and for each install shape (the runtime alone, `[generate]`, `[train]`) the
time pip takes to install the wheel into a fresh venv and the venv's size on disk.

Installs are offline, from the cached wheelhouse of each shape (tests/support/release.py), with
`--no-compile`: the time is unpacking and linking, not downloads (the first run fills the
wheelhouses from PyPI, and that time is not counted) nor bytecode. One install per shape; the
machine's load is printed with the table, since it moves the times.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.support.release import SHAPES, build, install, wheelhouse

MB = 1_000_000


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="orlgen-release-") as scratch:
        tmp = Path(scratch)
        sdist, wheel = build(tmp)
        print(f"sdist {sdist.name}: {sdist.stat().st_size / 1000:.0f} kB")
        print(f"wheel {wheel.name}: {wheel.stat().st_size / 1000:.0f} kB")
        for shape in SHAPES:
            wheelhouse(shape)  # filled before the clock starts
        print(f"load average before the installs: {os.getloadavg()[0]:.1f} (1 min)")
        print(f"{'shape':<10} {'install (s)':>12} {'venv (MB)':>10}")
        for shape in SHAPES:
            installed = install(tmp / f"venv-{shape}", wheel, shape)
            print(f"{shape:<10} {installed.seconds:>12.1f} {installed.size / MB:>10.0f}")


if __name__ == "__main__":
    main()
