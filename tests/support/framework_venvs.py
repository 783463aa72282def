"""The trainers' venvs the verifiers, skyrl and ART tests (and `bench/trainers.py`) run in, each built
once and cached under ~/.cache/orlgen-test-venvs.

Each holds one framework's pins and orlgen's runtime requirements from pyproject.toml — not
orlgen's extras, so nothing of the openreward SDK, the generator's toolchain or TRL: a generated
trainer module must run on the runtime alone (and verifiers pins mcp 2, which cannot share a venv
with the openreward SDK, TRAINERS.md §6). orlgen itself and the generated modules are reached
through PYTHONPATH (the repository), so a source change needs no rebuild. The cache key is the
pins plus the runtime's requirement list; a venv is used only once its `ready` mark is written
(its scripts hold absolute paths, so it is built in place, never moved). One build at a time per
venv: an exclusive lock beside it is held from the check to the mark, so concurrent test workers
(pytest-xdist) or two checkouts sharing the cache wait for one build instead of deleting each
other's half-built venv.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import tomllib
from pathlib import Path

from bench.install import venv
from tests.support.modules import REPO

CACHE = Path.home() / ".cache" / "orlgen-test-venvs"

# verifiers: `uv` because the null harness prepares its chat program with `uv sync --script`;
# Pillow in both, because images reach the model (MCP image content, SkyRL content parts).
VERIFIERS = ("verifiers==0.4.0", "uv", "pillow")
SKYRL = ("skyrl-gym==0.4.0", "pillow")
# ART 0.5.23 needs Python 3.12 (this venv's is 3.11); its client side only, which pulls no torch
# (`pip install --dry-run` on 3.12: openai, litellm, weave, polars and the like, no torch, no CUDA).
ART = ("openpipe-art==0.5.23", "pillow")
ART_INTERPRETER = Path("/root/.pyenv/versions/3.12.1/bin/python3.12")
# Ray, for the cluster-wide session budget: the version verl 0.9.1 brings.
RAY = ("ray==2.60.0",)
# verl 0.9.1 on the local CPU torch (any other torch pulls a CUDA build), with what its
# `verl-core` extra lists and `verl.experimental.agent_loop` imports; its own venv, because its
# wheel installs a top-level `tests` package (shared/TRAINERS-NEXT.md section 1.1).
VERL = ("torch==2.13.0", "verl==0.9.1", "cachetools", "fastapi", "uvicorn", "pyzmq", "msgspec", "pillow")


def _bin(name: str, pins: tuple[str, ...], python: Path | None = None) -> Path:
    """The bin directory of the cached venv `name` holding `pins` and the runtime, built if missing
    (from the interpreter `python`, default this one's, which then is part of the key)."""
    runtime = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    requirements = [*pins, *runtime]
    keyed = requirements if python is None else [str(python), *requirements]
    key = hashlib.sha256(json.dumps(keyed).encode()).hexdigest()[:16]
    home = CACHE / f"{name}-{key}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (home / "ready").exists():
            shutil.rmtree(home, ignore_errors=True)
            venv(home, *requirements, compile=False, python=python)
            (home / "ready").write_text("\n".join(requirements) + "\n")
    return home / "bin"


def verifiers_bin() -> Path:
    """The verifiers 0.4 venv's bin directory (holds `python`, `vf-eval` and `uv`)."""
    return _bin("verifiers", VERIFIERS)


def skyrl_python() -> Path:
    """The skyrl-gym 0.4 venv's interpreter."""
    return _bin("skyrl", SKYRL) / "python"


def art_python() -> Path:
    """The ART 0.5.23 venv's interpreter (Python 3.12)."""
    return _bin("art", ART, ART_INTERPRETER) / "python"


def ray_python() -> Path:
    """The Ray 2.60 venv's interpreter."""
    return _bin("ray", RAY) / "python"


def verl_python() -> Path:
    """The verl 0.9.1 venv's interpreter."""
    return _bin("verl", VERL) / "python"
