"""The skyrl-gym 0.4 venv the skyrl tests run episodes in, built once and cached.

It holds `skyrl-gym==0.4.0` and orlgen's runtime requirements from pyproject.toml — not orlgen's
extras, so nothing of the openreward SDK, the generator's toolchain or TRL: a generated
`_skyrl` module must run on the runtime alone. orlgen itself and the generated modules are
reached through PYTHONPATH (the repository), so a source change needs no rebuild. The cache key
is the pins plus the runtime's requirement list; a venv is used only once its `ready` mark is
written (its scripts hold absolute paths, so it is built in place, never moved).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tomllib
from pathlib import Path

from bench.install import venv
from tests.support.modules import REPO

PINS = ("skyrl-gym==0.4.0", "pillow")
CACHE = Path.home() / ".cache" / "orlgen-test-venvs"


def _requirements() -> list[str]:
    runtime = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [*PINS, *runtime]


def skyrl_python() -> Path:
    """The cached venv's interpreter, the venv built first if missing."""
    requirements = _requirements()
    key = hashlib.sha256(json.dumps(requirements).encode()).hexdigest()[:16]
    home = CACHE / f"skyrl-{key}"
    if not (home / "ready").exists():
        shutil.rmtree(home, ignore_errors=True)
        home.parent.mkdir(parents=True, exist_ok=True)
        venv(home, *requirements, compile=False)
        (home / "ready").write_text("\n".join(requirements) + "\n")
    return home / "bin" / "python"
