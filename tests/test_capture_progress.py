"""`orlgen snapshot` on a terminal shows one status line on stderr while it waits (discovery,
probe sessions, tasks), and clears it (through a pipe it prints none: the other CLI tests
assert an empty stderr). A real pseudo-terminal, a real server."""

from __future__ import annotations

import os
import pty
import subprocess

import pytest

from tests.support.cli import command
from tests.support.modules import REPO


def on_a_terminal(*args: str) -> tuple[int, str, str]:
    """`orlgen ARGS` with stderr on a pseudo-terminal: exit code, stdout, and what the terminal got."""
    main, secondary = pty.openpty()
    process = subprocess.Popen(command(*args), cwd=REPO, stdout=subprocess.PIPE, stderr=secondary, text=True)
    os.close(secondary)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(main)
    stdout = process.stdout.read() if process.stdout else ""
    return process.wait(timeout=120), stdout, seen.decode()


@pytest.mark.slow
def test_a_capture_on_a_terminal_shows_its_stages_on_one_line(echo_url, tmp_path):
    code, stdout, terminal = on_a_terminal("snapshot", echo_url, "--out", str(tmp_path))
    assert code == 0, terminal
    assert stdout.startswith(f"wrote {tmp_path / 'echo.snapshot.json'} (2 tools; tasks stored: train 8/8)")
    updates = [part.removeprefix("\x1b[K") for part in terminal.split("\r")]
    assert "orlgen: capturing: discovery..." in updates
    assert ["orlgen: capturing: probe sessions 0/3", "orlgen: capturing: probe sessions 3/3"] == [
        update for update in updates if "probe sessions" in update and update.endswith(("0/3", "3/3"))
    ]
    assert "orlgen: capturing: tasks of train 8/8" in updates
    assert terminal.endswith("\r\x1b[K"), "the status line is cleared"
    assert "\n" not in terminal.replace("\r\n", ""), "one line, rewritten in place"
