"""orlgen's wheel and a venv holding it: for `tests/test_runtime_install.py` (the runtime installs
alone) and `bench.wire` (what that install weighs and how fast it starts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from bench.common import REPO


def run(*command: str | Path, timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=timeout, **kwargs)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"{result.args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def wheel(tmp: Path, pyproject: str | None = None) -> Path:
    """orlgen's wheel, built from a copy of what it packages (no build files left in the repo);
    with `pyproject`, that text stands in for pyproject.toml (e.g. main's, for a "before")."""
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    if pyproject is not None:
        (source / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "templates", source / "templates", ignore=ignore)
    shutil.copytree(REPO / "orlgen", source / "orlgen", symlinks=True, ignore=ignore)
    wheels = tmp / "wheels"
    ok(
        run(
            sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
            "--wheel-dir", wheels, source, timeout=300,
        )
    )  # fmt: skip
    (built,) = wheels.glob("orlgen-*.whl")
    return built


def venv(path: Path, *requirements: str, compile: bool = True, python: str | Path | None = None) -> Path:
    """A fresh venv at `path` with `requirements` installed (pip from this interpreter); its
    interpreter. `compile=False` leaves bytecode to the imports that need it (quicker to build);
    `python`: the interpreter the venv is made from (default: this one)."""
    ok(run(python or sys.executable, "-m", "venv", "--without-pip", path, timeout=120))
    made = path / "bin" / "python"
    flags = [] if compile else ["--no-compile"]
    ok(run(sys.executable, "-m", "pip", "--python", made, "install", "--quiet", *flags, *requirements, timeout=900))
    return made
