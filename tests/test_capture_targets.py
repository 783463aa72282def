"""What `orlgen snapshot TARGET` takes TARGET for, before any request: a file path is neither a
catalog name nor imported; and a `module:EnvClass` whose generated module would hide the env's
own file of that name is warned about."""

from __future__ import annotations

import shutil
import socket
import textwrap

import pytest
from orlgen.capture.shadowing import shadowed_file
from orlgen.snapshot.model import Target

from tests.support.cli import invoke, run_orlgen
from tests.support.modules import REPO

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


def _module_target(module: str) -> Target:
    return Target(kind="module", value=f"{module}:Zebra", env="zebra")


def test_a_module_named_like_one_of_the_envs_own_files_is_found(tmp_path, monkeypatch):
    """Found without running anything: `find_spec` of a top-level module reads no code."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "zebra.py").write_text("raise SystemExit('never run')\n")
    (tmp_path / "server.py").write_text("from zebra import Zebra\n")
    (tmp_path / "puzzles").mkdir()
    (tmp_path / "puzzles" / "__init__.py").write_text("")
    assert shadowed_file(_module_target("zebra"), "zebra") == tmp_path / "zebra.py"
    assert shadowed_file(_module_target("zebra"), "server") == tmp_path / "server.py"
    assert shadowed_file(_module_target("zebra"), "puzzles") == tmp_path / "puzzles"
    assert shadowed_file(_module_target("zebra"), "zebra_env") is None
    assert shadowed_file(Target(kind="url", value="http://h:1", env="zebra"), "zebra") is None
    # a dotted target's siblings are imported through its package
    assert shadowed_file(Target(kind="module", value="examples.echo:Echo", env="echo"), "echo") is None


@pytest.mark.slow
def test_capturing_a_module_whose_generated_name_hides_it_warns_and_says_how_out(tmp_path):
    shutil.copy(REPO / "examples" / "echo.py", tmp_path / "echo.py")
    result = run_orlgen("snapshot", "echo:Echo", "--out", "gen", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        "orlgen: warning: the generated module echo.py has the name of the env's own echo.py: where both "
        "directories are on sys.path, one hides the other (the env's own imports of 'echo' get the adapter); "
        "capture it under another name with --name echo_env\n"
    )
    assert (tmp_path / "gen" / "echo.py").is_file()
    renamed = run_orlgen("snapshot", "echo:Echo", "--name", "echo_env", "--out", "other", cwd=tmp_path)
    assert renamed.returncode == 0 and renamed.stderr == "", renamed.stderr
