"""The one way tests run the `orlgen` command in a child process: `python -m orlgen` with the
interpreter running the tests, so no test depends on where (or under which name) the venv is."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ORLGEN = (sys.executable, "-m", "orlgen")


def run_orlgen(
    *args: str | Path, cwd: Path = REPO, env: Mapping[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`orlgen ARGS...` in a child process: its real exit code, stdout and stderr."""
    command = [*ORLGEN, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)
