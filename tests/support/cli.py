"""The one way tests run the `orlgen` command, in one of two modes.

- `run_orlgen` / `start_orlgen`: the console script that installing orlgen put into the scripts
  directory of the environment running the tests (found with `sysconfig`, where pip puts it), in
  a child process, as a user's shell runs it: its own interpreter, its real exit code, stdout,
  stderr and signals. No fallback to `python -m orlgen`: that would pass while the installed
  entry point is broken, and the entry point is what users run. A missing script fails the test
  with one line that says how to install it. No test depends on where the venv is.
- `invoke`: the same click command in this process, for tests of what a command does rather than
  of its process: no interpreter start-up per call (most calls in the suite are of this kind).
  An exception that escapes the command is raised, not hidden in the result.
"""

from __future__ import annotations

import os
import subprocess
import sysconfig
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

REPO = Path(__file__).resolve().parents[2]


def orlgen_script() -> Path:
    """The installed `orlgen` console script of this environment, or a one-line test failure."""
    name = "orlgen.exe" if os.name == "nt" else "orlgen"
    script = Path(sysconfig.get_path("scripts")) / name
    if not script.is_file():
        pytest.fail(f"no `orlgen` command at {script}: install orlgen into this environment (`make install`)", False)
    return script


def command(*args: str | Path) -> list[str]:
    """The argv of `orlgen ARGS...` through the installed script."""
    return [str(orlgen_script()), *map(str, args)]


def run_orlgen(
    *args: str | Path, cwd: Path = REPO, env: Mapping[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """`orlgen ARGS...` in a child process, to its end: its real exit code, stdout and stderr.
    `env` replaces the child's whole environment (None: this process's)."""
    return subprocess.run(command(*args), capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def start_orlgen(*args: str | Path, cwd: Path = REPO, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    """`orlgen ARGS...` started in a child process with piped text stdout and stderr, for a test
    that interrupts it or watches it while it runs."""
    return subprocess.Popen(command(*args), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def invoke(*args: str | Path, env: Mapping[str, str | None] | None = None) -> Result:
    """`orlgen ARGS...` in this process (click's runner); `env` is laid over os.environ for the call."""
    from orlgen.cli import main

    result = CliRunner(env=env).invoke(main, [str(arg) for arg in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result
