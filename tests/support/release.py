"""orlgen as a release: the sdist and wheel `python -m build` makes from the project's files, and
fresh venvs holding the wheel in each of its three shapes (the runtime alone, `[generate]`,
`[train]`), for tests/test_release.py and `python -m bench.release` (`make release-check`).

A venv is made fresh for every install: what is cached is a wheelhouse per shape, under
~/.cache/orlgen-test-venvs beside the trainers' venvs (tests/support/framework_venvs.py), keyed
by the shape's requirement list as pyproject.toml declares it (and the interpreter's version), so
`pip install --no-index --find-links` installs the wheel with no index and no network; only a
cold cache (or a changed requirement) asks PyPI, once, to fill it. One build at a time per
wheelhouse: an exclusive lock beside it is held from the check to its `ready` mark.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from bench.install import ok, run
from tests.support.framework_venvs import CACHE
from tests.support.modules import REPO

SHAPES = ("runtime", "generate", "train")
# torch pinned, as the Makefile installs it first: trl needs it, and any other spec downloads gigabytes.
TORCH = "torch==2.13.0"


def project_files(dest: Path) -> Path:
    """A copy of what would be committed (tracked and untracked files git does not ignore, as
    they are in the working tree, links kept): what a release of this tree builds from, without
    the build's scratch files landing in the repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source, target = REPO / name, dest / name
        if not source.is_symlink() and not source.is_file():
            continue  # deleted in the working tree, not yet in git
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy2(source, target)
    return dest


class Built(NamedTuple):
    source: Path  # the project's files the sdist was made from (project_files)
    sdist: Path
    wheel: Path


def build(tmp: Path) -> Built:
    """The sdist and the wheel `python -m build` makes (the wheel from the sdist, so the sdist is
    proven complete), with this venv's setuptools (`--no-isolation`: nothing downloaded)."""
    source = project_files(tmp / "source")
    dist = tmp / "dist"
    # -P: the source's directory is not put on sys.path, where a `build/` folder would shadow the package.
    ok(run(sys.executable, "-P", "-m", "build", "--no-isolation", "--outdir", dist, source, timeout=600, cwd=tmp))
    (sdist,) = dist.glob("orlgen-*.tar.gz")
    (wheel,) = dist.glob("orlgen-*.whl")
    return Built(source, sdist, wheel)


def requirements(shape: str) -> list[str]:
    """The requirements a shape installs besides orlgen, as pyproject.toml declares them, and its
    build backend's (setuptools), so that pip can also build orlgen from a source tree offline
    (the GitHub Action installs its own checkout)."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    project, extras = pyproject["project"], pyproject["project"]["optional-dependencies"]
    extra = {"runtime": [], "generate": extras["generate"], "train": [TORCH, *extras["train"]]}[shape]
    return [*project["dependencies"], *extra, *pyproject["build-system"]["requires"]]


def wheelhouse(shape: str) -> Path:
    """A directory holding a wheel of every requirement of `shape`, built once and cached."""
    needed = requirements(shape)
    key = hashlib.sha256(json.dumps([sys.version_info[:2], needed]).encode()).hexdigest()[:16]
    house = CACHE / f"wheelhouse-{shape}-{key}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"wheelhouse-{shape}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (house / "ready").exists():
            shutil.rmtree(house, ignore_errors=True)
            pip = (sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", house)
            ok(run(*pip, *needed, timeout=1800))
            (house / "ready").write_text("\n".join(needed) + "\n")
    return house


@dataclass(frozen=True)
class Installed:
    python: Path
    seconds: float  # pip's wall time: the venv's creation and the wheelhouse's first fill excluded
    size: int  # bytes of the whole venv on disk


def install(path: Path, wheel: Path, shape: str) -> Installed:
    """A fresh venv at `path` with `wheel` in `shape`, from the shape's wheelhouse alone. Bytecode
    is left to the imports that need it (`--no-compile`), as tests/test_runtime_install.py does."""
    house = wheelhouse(shape)
    ok(run(sys.executable, "-m", "venv", "--without-pip", path, timeout=120))
    python = path / "bin" / "python"
    extra = {"runtime": "", "generate": "[generate]", "train": "[train]"}[shape]
    pins = [TORCH] if shape == "train" else []
    pip = (sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile", "--no-index")
    started = time.perf_counter()
    ok(run(*pip, "--find-links", house, *pins, f"orlgen{extra} @ {wheel.as_uri()}", timeout=1800))
    seconds = time.perf_counter() - started
    size = sum(file.stat().st_size for file in path.rglob("*") if file.is_file() and not file.is_symlink())
    return Installed(python, seconds, size)
