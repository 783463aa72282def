"""What `check` trusts, made exact (issue 40, items 1, 2 and the `check` half of 4).

Each attack runs for real on a private copy of the project (`test_security_repo.project`), made a
throwaway git repository where the attack is a commit: a committed `pyvenv.cfg` must not switch
the shadow scan off for its folder (1), a checked-hash `.pyc` whose code objects compare equal
to the source's but are not its bytes must not pass (2), and a snapshot resealed to another host
must be named by `check` whether or not it names secrets (4). Each attack is first shown to work
(the import runs the planted code, or Python loads the forged code), then `check` must fail
naming the file, with and without the speed cache.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import venv
from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]
from pathlib import Path
from types import CodeType

import pytest
import test_security_repo
from orlgen.snapshot.model import Target
from test_check import orlgen
from test_security_import import CANARY, RUNS, _under_pytest, check_lines, hijacker, python, reseal

project = test_security_repo.project  # the fixture: a private copy of the project, HOME and cache

CACHED_AND_NOT = ((), ("--no-cache",))


def commit_everything(project: Path) -> None:
    """Make the project a git repository whose one commit holds every file in it (what a merged
    pull request leaves in CI's checkout); ignore rules cannot leave a file out."""
    identity = ["-c", "user.name=reviewer", "-c", "user.email=reviewer@example.invalid"]
    for args in (["init", "-q"], ["add", "-A", "--force"], [*identity, "commit", "-q", "-m", "pull request"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


# --------------------------------------------------------------------------------------------
# item 1: a committed pyvenv.cfg does not make its folder a virtualenv to skip
# --------------------------------------------------------------------------------------------


def in_tests(project: Path) -> tuple[Path, list[str]]:
    """pytest puts tests/ first on sys.path: its generated.py wins the import."""
    (project / "tests").mkdir()
    (project / "tests" / "generated.py").write_text(hijacker(project))
    return project / "tests", _under_pytest(project)


def in_examples(project: Path) -> tuple[Path, list[str]]:
    """A script in examples/ puts examples/ on sys.path: a module there beats the namespace package."""
    (project / "examples").mkdir()
    (project / "examples" / "generated.py").write_text(hijacker(project))
    return project / "examples", ["-c", "import sys; sys.path.append('examples'); import generated.echo"]


@pytest.mark.slow
@pytest.mark.parametrize("plant", [in_tests, in_examples], ids=lambda f: f.__name__)
def test_a_committed_pyvenv_cfg_does_not_hide_a_shadow(project: Path, plant):
    folder, importer = plant(project)
    (folder / "pyvenv.cfg").write_text("")  # what made the scan skip the folder as a virtualenv
    commit_everything(project)
    ran = python(project, *importer)
    assert (project / CANARY).exists(), ran.stdout + ran.stderr  # the project's own import runs the shadow
    for args in CACHED_AND_NOT:
        lines = check_lines(project, *args)
        assert len(lines) == 1 and lines[0].startswith(
            f"{folder / 'generated.py'}: named like the output directory"
        ), lines


def test_an_untracked_virtualenv_in_the_project_is_still_skipped(project: Path):
    """A real virtualenv beside the project's files (git does not track it) is not the project's
    code: the scan leaves it, and what it holds, alone. (A guard: this held before the change.)"""
    commit_everything(project)
    venv.create(project / "venv", with_pip=False, symlinks=True)
    (project / "venv" / "generated.py").write_text("X = 1\n")  # would be a shadow in a project folder
    for args in CACHED_AND_NOT:
        result = orlgen("check", *args, project / "generated")
        assert (result.returncode, result.stdout) == (0, "generated files are current\n"), result


# --------------------------------------------------------------------------------------------
# item 2: a cached pyc must be the bytes of its source's code, not only `==` to it
# --------------------------------------------------------------------------------------------


def shrink_stacks(code: CodeType) -> CodeType:
    """`code` and every code object in it with a value stack of one slot: `==` does not compare
    `co_stacksize`, so the result equals `code` while the interpreter overruns its frames."""
    consts = tuple(shrink_stacks(const) if isinstance(const, CodeType) else const for const in code.co_consts)
    return code.replace(co_stacksize=1, co_consts=consts)


def test_a_checked_hash_pyc_with_too_small_stacks_fails_check(project: Path):
    module = project / "generated" / "echo.py"
    source = module.read_bytes()
    code = compile(source, str(module), "exec", dont_inherit=True)
    forged = shrink_stacks(code)
    assert forged == code  # what `check` compared
    pyc = module.parent / "__pycache__" / f"echo.{sys.implementation.cache_tag}.pyc"
    pyc.parent.mkdir()
    pyc.write_bytes(_code_to_hash_pyc(forged, importlib.util.source_hash(source), checked=True))
    loaded = "import importlib.util as u; print(u.find_spec('generated.echo').loader.get_code('generated.echo').co_stacksize)"
    assert python(project, "-c", loaded).stdout == "1\n"  # the code Python would run: the forged one
    for args in CACHED_AND_NOT:
        assert check_lines(project, *args) == [
            f"{pyc}: checked-hash bytecode that is not the code of its source: {RUNS}"
        ]


# --------------------------------------------------------------------------------------------
# item 4 (check): a snapshot moved to another host is named, secrets or not
# --------------------------------------------------------------------------------------------

ECHO_ENTRY = '\n[[tool.orlgen.envs]]\ntarget = "examples.echo:Echo"\n'


@pytest.mark.slow
def test_a_target_moved_to_another_host_fails_check_without_secrets(project: Path):
    config = project / "pyproject.toml"
    config.write_text(config.read_text() + ECHO_ENTRY)
    snapshot = project / "generated" / "echo.snapshot.json"
    reseal(snapshot, Target(kind="url", value="http://10.99.0.1:8000", env="echo"), [])  # written, never reached
    assert orlgen("generate", project / "generated").returncode == 0  # the module is current again
    for args in CACHED_AND_NOT:
        lines = check_lines(project, *args)
        assert lines[0].startswith(f"{snapshot}: TARGET_CHANGED: connects to 'http://10.99.0.1:8000', which no "), lines
        assert len([line for line in lines if line.startswith(str(project))]) == 1, lines
    config.write_text(config.read_text() + '\n[[tool.orlgen.envs]]\ntarget = "http://10.99.0.1:8000/"\n')
    granted = orlgen("check", project / "generated")
    assert granted.returncode == 0, granted.stdout  # declared in the reviewed config: fine
