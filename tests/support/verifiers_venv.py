"""The verifiers 0.4 venv the slow verifiers tests run `vf-eval` in, built once and cached.

verifiers pins mcp 2, which cannot share a venv with the openreward SDK (TRAINERS.md §6), so it
gets its own venv: `verifiers==0.4.0`, `uv` (the null harness prepares its chat program with
`uv sync --script`), Pillow (images reach the model as MCP image content) and orlgen's runtime requirements from pyproject.toml — not orlgen's extras,
so nothing of the openreward SDK. orlgen itself and the generated modules are reached through
PYTHONPATH (the repository), so a source change needs no rebuild. The cache key is the pins plus
the runtime's requirement list; a venv is used only once its `ready` mark is written (scripts hold
absolute paths, so it is built in place, never moved).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tomllib
from pathlib import Path

from bench.install import venv
from tests.support.modules import REPO

PINS = ("verifiers==0.4.0", "uv", "pillow")
CACHE = Path.home() / ".cache" / "orlgen-test-venvs"


def _requirements() -> list[str]:
    runtime = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [*PINS, *runtime]


def verifiers_bin() -> Path:
    """The cached venv's bin directory (holds `python`, `vf-eval` and `uv`), built if missing."""
    requirements = _requirements()
    key = hashlib.sha256(json.dumps(requirements).encode()).hexdigest()[:16]
    home = CACHE / f"verifiers-{key}"
    if not (home / "ready").exists():
        shutil.rmtree(home, ignore_errors=True)
        home.parent.mkdir(parents=True, exist_ok=True)
        venv(home, *requirements, compile=False)
        (home / "ready").write_text("\n".join(requirements) + "\n")
    return home / "bin"
