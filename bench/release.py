"""`python -m bench.release` (run by `make release-check`): what a release weighs. The sdist's and
the wheel's sizes, and for each install shape (the runtime alone, `[generate]`, `[train]`) the
time pip takes to install the wheel into a fresh venv and the venv's size on disk.

Installs are offline, from the cached wheelhouse of each shape (tests/support/release.py), with
`--no-compile`: the time is unpacking and linking, not downloads (the first run fills the
wheelhouses from PyPI, and that time is not counted) nor bytecode. One install per shape; the
machine's load is printed with the table, since it moves the times. Each venv then answers one
command of its shape, from a directory holding only a copy of generated/ (no orlgen source): the
runtime builds the echo module's dataset, `[generate]` answers `orlgen --version`, `[train]`
imports trl beside the runtime.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from bench.common import REPO
from bench.install import ok, run
from tests.support.release import SHAPES, build, install, wheelhouse

MB = 1_000_000
SMOKE = {  # shape: (what the table says, the command from the venv's bin directory)
    "runtime": (
        "echo.build_dataset",
        ("python", "-c", "import sys; sys.path.insert(0, 'generated'); import echo; echo.build_dataset(num_tasks=2)"),
    ),
    "generate": ("orlgen --version", ("orlgen", "--version")),
    "train": ("import trl", ("python", "-c", "import trl, orlgen.runtime")),
}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="orlgen-release-") as scratch:
        tmp = Path(scratch)
        _, sdist, wheel = build(tmp)
        print(f"sdist {sdist.name}: {sdist.stat().st_size / 1000:.0f} kB")
        print(f"wheel {wheel.name}: {wheel.stat().st_size / 1000:.0f} kB")
        for shape in SHAPES:
            wheelhouse(shape)  # filled before the clock starts
        print(f"load average before the installs: {os.getloadavg()[0]:.1f} (1 min)")
        work = tmp / "work"
        shutil.copytree(REPO / "generated", work / "generated", ignore=shutil.ignore_patterns("__pycache__"))
        print(f"{'shape':<10} {'install (s)':>12} {'venv (MB)':>10}  smoke")
        for shape in SHAPES:
            installed = install(tmp / f"venv-{shape}", wheel, shape)
            label, (program, *args) = SMOKE[shape]
            ok(run(installed.python.parent / program, *args, timeout=300, cwd=work))
            print(f"{shape:<10} {installed.seconds:>12.1f} {installed.size / MB:>10.0f}  {label}: ok")


if __name__ == "__main__":
    main()
