"""The suite runs the same wherever it runs: no test names the venv's directory (a venv anywhere
must pass too), every test runs the command through `tests/support/cli.py`, helpers live in
`tests/support/`, `make test` runs the slow tests too, and fuzzing in `make test` draws from a
fixed seed."""

from __future__ import annotations

import ast
import re
import sysconfig
import tomllib

import pytest

from tests.support import cli
from tests.support.modules import REPO

TESTS = REPO / "tests"
CLI_RUNNER = "support/cli.py"
# Spelled apart, so that this file does not match itself: the venv's directory, and the ways of
# running the command other than tests/support/cli.py's.
VENV = "." + "venv"
OTHER_RUNNERS = ("Cli" + "Runner", "orlgen.cli import " + "main", '"-m", "' + 'orlgen"', 'with_name("' + 'orlgen")')


def sources() -> dict[str, str]:
    """Every Python file under tests/, by its path relative to tests/."""
    return {
        path.relative_to(TESTS).as_posix(): path.read_text(encoding="utf-8") for path in sorted(TESTS.rglob("*.py"))
    }


def test_no_test_depends_on_where_the_venv_is():
    named = [name for name, text in sources().items() if VENV in text]
    assert named == [], f"these tests name the venv's directory: {named}; use tests/support/cli.py"


def test_every_test_runs_the_command_through_the_one_runner():
    others = {name: [way for way in OTHER_RUNNERS if way in text] for name, text in sources().items()}
    others.pop(CLI_RUNNER)
    assert {name: ways for name, ways in others.items() if ways} == {}, "use tests/support/cli.py"


def test_helpers_live_in_tests_support():
    loose = [path.name for path in sorted(TESTS.glob("*.py")) if not path.name.startswith("test_")]
    assert loose == ["conftest.py"], "helper modules belong in tests/support/"


def test_fuzzing_is_seeded_unless_make_fuzz_says_otherwise():
    source = (REPO / "tests" / "test_fuzz.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    given = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "given" for d in node.decorator_list)
    ]
    assert given
    for test in given:
        decorators = [ast.unparse(d) for d in test.decorator_list]
        assert "seed(SEED)" in decorators, (test.name, decorators)
    assert ".example()" not in source  # unseeded draws


def test_the_slow_set_is_marked_and_make_test_runs_it():
    """`pytest -m "not slow"` is the fast set; `make test` runs everything, slow tests included."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "--strict-markers" in config["addopts"].split()
    assert [marker.split(":")[0] for marker in config["markers"]] == ["slow"]
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(encoding="utf-8"), re.M)
    assert recipe, "Makefile has no test target"
    (pytest_line,) = [line for line in recipe.group(1).splitlines() if " pytest" in line]
    assert "-m" not in pytest_line.split(" pytest", 1)[1].split(), pytest_line  # no marker deselects


def test_a_missing_orlgen_command_fails_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(sysconfig, "get_path", lambda name, *args: str(tmp_path))
    with pytest.raises(pytest.fail.Exception) as failed:
        cli.run_orlgen("--help")
    assert (
        str(failed.value)
        == f"no `orlgen` command at {tmp_path / 'orlgen'}: install orlgen into this environment (`make install`)"
    )


def test_the_files_run_first_exist():
    from tests.conftest import LONGEST_FIRST

    assert [name for name in LONGEST_FIRST if not (TESTS / name).is_file()] == []
