"""Ctrl-C during a capture cancels the request in flight at once, and what it opened is closed:
a probe session is deleted on the server, not left for the server to reap 15 minutes later."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from orlgen.serve import ServerProcess

from tests.support.cli import start_orlgen


def wait_for(path: Path, seconds: float = 90) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return path.exists()


@pytest.mark.slow
def test_ctrl_c_during_a_probe_deletes_the_session_it_opened(tmp_path, monkeypatch):
    stalled, torn_down = tmp_path / "stalled", tmp_path / "torn-down"
    monkeypatch.setenv("ORLGEN_STALL_FILE", str(stalled))
    monkeypatch.setenv("ORLGEN_TEARDOWN_FILE", str(torn_down))
    out = tmp_path / "out"
    with ServerProcess("tests.support.envs.stalling:StallingSession") as server:
        process = start_orlgen("snapshot", server.url, "--out", out)
        assert wait_for(stalled), process.communicate()  # the probe session is open, its prompt stalls
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
        took = time.monotonic() - interrupted
        assert process.returncode == 130, (stdout, stderr)
        assert took < 5, f"Ctrl-C took {took:.1f} s to act (1.5 s measured at load 9; the prompt stalls 600 s)"
        assert stderr == "orlgen: interrupted\n"
        assert wait_for(torn_down, 10), "the interrupted capture left its probe session open on the server"
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("env", ["Stalling", "StallingSession"])
def test_ctrl_c_during_an_in_process_capture_does_not_wait_for_the_envs_code(env, tmp_path, monkeypatch):
    """A `module:Class` target is served inside the capturing process, so the env's stalled
    code (a 600 s task listing, a 600 s prompt) runs on one of its threads: it must not hold the
    exit (it held it for the whole 600 s while the event loop's pool threads were joined at exit)."""
    stalled = tmp_path / "stalled"
    monkeypatch.setenv("ORLGEN_STALL_FILE", str(stalled))
    monkeypatch.setenv("ORLGEN_TEARDOWN_FILE", str(tmp_path / "torn-down"))
    out = tmp_path / "out"
    process = start_orlgen("snapshot", f"tests.support.envs.stalling:{env}", "--out", out)
    try:
        assert wait_for(stalled), process.communicate()
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    took = time.monotonic() - interrupted
    assert process.returncode == 130, (stdout, stderr)
    # 1.7 s measured on a quiet machine, 4-6 s at load 6 (the interpreter's own teardown): the
    # bound is what tells it from waiting on the env (600 s) or on uvicorn's graceful stop (10 s).
    assert took < 9, f"Ctrl-C took {took:.1f} s to act (the env's code stalls 600 s)"
    assert stderr == "orlgen: interrupted\n"
    assert not out.exists()
