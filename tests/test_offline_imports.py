"""Offline commands import no network client: `orlgen check` and `orlgen generate` read snapshots
and render modules, so the wire (`orlgen.runtime.ors.client`, aiohttp) stays unimported; only a capture
(`snapshot`, `sync`, `diff --against TARGET`) imports it, when it runs."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.modules import REPO

WIRE = ("aiohttp", "orlgen.runtime.ors.client", "orlgen.capture.live")


def _tiny_project(root: Path) -> Path:
    """A project holding echo's snapshot and module, and the lock of the versions that generated
    them, as generated/ has them."""
    (root / "pyproject.toml").write_text('[tool.orlgen]\nout = "generated"\n', encoding="utf-8")
    out = root / "generated"
    out.mkdir()
    for name in ("echo.snapshot.json", "echo.tasks.jsonl", "echo.py", "orlgen.lock"):
        shutil.copyfile(REPO / "generated" / name, out / name)
    return out


def _loaded_after(*args: str | Path) -> tuple[int, list[str]]:
    """Run `orlgen ARGS` in a fresh interpreter (through the suite's one runner, in-process there)
    and list which of the wire's modules it imported."""
    probe = (
        "import sys\n"
        "from tests.support.cli import invoke\n"
        f"result = invoke(*{[str(arg) for arg in args]!r})\n"
        f"print(result.exit_code, sorted(m for m in sys.modules if m.startswith({WIRE!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    code, loaded = done.stdout.strip().splitlines()[-1].split(" ", 1)
    return int(code), ast.literal_eval(loaded)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["check", "generate"])
def test_an_offline_command_imports_no_network_client(tmp_path: Path, command: str):
    out = _tiny_project(tmp_path)
    code, loaded = _loaded_after(command, "--no-cache", out)
    assert code == 0
    assert loaded == []
