"""`make demo` (examples/demo.py) runs the same every time: in a directory that a previous run
left behind, even one it left half-written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.modules import REPO

pytestmark = pytest.mark.slow  # the demo, run whole in a child process


def test_demo_runs_over_what_an_earlier_or_interrupted_run_left(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    # What an earlier run left: the snapshot of the env served on a port that is gone, a module
    # cut short, and a write that never finished.
    stale = json.loads((REPO / "generated" / "echo.snapshot.json").read_text())
    stale["target"] = {"kind": "url", "value": "http://127.0.0.1:1", "env": "echo"}
    (out / "echo.snapshot.json").write_text(json.dumps(stale))
    (out / "echo.py").write_text((REPO / "generated" / "echo.py").read_text()[:500])
    (out / ".echo.py.partial").write_text("")
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py"), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "get_reward() → 1.0" in result.stdout
    assert json.loads((out / "echo.snapshot.json").read_text())["target"]["value"] == "examples.echo:Echo"
