"""`python -m orlgen.serve`, as a user runs it: real child interpreters, real sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.support.modules import REPO


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "orlgen.serve", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_help_is_usage_not_a_target():
    result = serve("--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m orlgen.serve module:EnvClass [PORT]")
    assert "cannot import" not in result.stdout + result.stderr


@pytest.mark.parametrize("args", [(), ("examples.echo:Echo", "http"), ("examples.echo:Echo", "1", "2"), ("-x",)])
def test_bad_usage_is_one_line_and_exit_2(args):
    result = serve(*args)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.slow
def test_a_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve("examples.echo:Echo", str(port))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"orlgen.serve: cannot listen on 127.0.0.1:{port}: Address already in use\n"
