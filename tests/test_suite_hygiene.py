"""The suite runs the same wherever it runs: no test names the venv's directory (a venv anywhere
must pass too; tests run the command through `tests/support/cli.py`), and fuzzing in `make test` draws
from a fixed seed."""

from __future__ import annotations

import ast

from conftest import REPO

VENV = "." + "venv"  # spelled apart, so that this file does not match itself


def test_no_test_depends_on_where_the_venv_is():
    named = [path.name for path in sorted((REPO / "tests").glob("*.py")) if VENV in path.read_text(encoding="utf-8")]
    assert named == [], f"these tests name the venv's directory: {named}; use tests/support/cli.py"


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
