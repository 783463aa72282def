"""What `orlgen snapshot TARGET` takes TARGET for, before any request: a file path is neither a
catalog name nor imported."""

from __future__ import annotations

import socket
import textwrap

import pytest

from tests.support.cli import invoke

CALC = textwrap.dedent("""
    from pathlib import Path

    from openreward.environments import Environment

    Path("imported").write_text("the file was run")  # capture must never run it


    class Base(Environment):
        pass


    class Calc(Base):
        pass


    class Helper:
        pass
    """)


@pytest.fixture
def platform(monkeypatch):
    """A listening socket the platform URL points at: a catalog capture would connect to it."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        listening.setblocking(False)
        monkeypatch.setenv("OPENREWARD_API_URL", f"http://127.0.0.1:{listening.getsockname()[1]}")
        yield listening


def connected(listening: socket.socket) -> bool:
    try:
        listening.accept()[0].close()
    except BlockingIOError:
        return False
    return True


@pytest.mark.parametrize("given", ["envs/calc.py", "{cwd}/envs/calc.py"])
def test_a_python_file_names_the_targets_it_defines_and_is_never_run(tmp_path, monkeypatch, platform, given):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "calc.py").write_text(CALC)
    target = given.format(cwd=tmp_path)
    result = invoke("snapshot", target)
    assert result.exit_code == 2
    assert result.output == (
        f"orlgen: error: {target} is a file, not a target: capture its environment with "
        "`orlgen snapshot envs.calc:Base` or `orlgen snapshot envs.calc:Calc`\n"
    )
    assert not (tmp_path / "imported").exists(), "the file was imported"
    assert not connected(platform), "a file path reached the network as a catalog name"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["envs"]


def test_a_file_without_an_environment_or_missing_says_what_a_target_is(tmp_path, monkeypatch, platform):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tool.py").write_text("x = (\n")  # not even Python: parsed, not run
    result = invoke("snapshot", "tool.py")
    assert result.exit_code == 2
    assert result.output == (
        "orlgen: error: tool.py is a file, and defines no Environment subclass: a target is module:EnvClass "
        "(e.g. tool:MyEnv), Owner/Env or a URL\n"
    )
    missing = invoke("snapshot", "envs/gone.py")
    assert (
        missing.output
        == "orlgen: error: envs/gone.py: no such file; a target is Owner/Env, a URL, or module:EnvClass\n"
    )
    assert not connected(platform)
