"""`orlgen eval` reads its few task rows without importing `datasets` (a second of start-up, or
more on a busy machine), and gets the rows `build_dataset` holds, Arrow's unification included.

The rows are compared with `build_dataset`'s own for every generated example module and split;
a real `orlgen eval` process is then watched (`-X importtime`) for what it imports.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from orlgen.runtime.data.dataset import plain_rows, to_dataset
from orlgen.runtime.surface import task_rows

from bench.chat_server import ChatServer, serving
from tests.support.cli import orlgen_script
from tests.support.models.scripted_policy import scripted
from tests.support.modules import REPO, load_module

MODULES = ("echo", "helpdesk", "canvas", "word_grid", "hostile", "icu_sepsis", "interview")


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_task_rows_are_build_datasets_rows(name):
    module = load_module(REPO / "generated" / f"{name}.py")
    for split in module.SPLITS:
        expected = [dict(row) for row in module.build_dataset(split)]
        rows = task_rows(module.environment_factory.spec, split)
        assert rows == expected
        assert [list(row) for row in rows] == [list(row) for row in expected]  # the columns' order too
        first = task_rows(module.environment_factory.spec, split, 1)
        assert first == expected[:1]


UNIFIED = {
    "nested": [{"a": 1, "b": {"x": "s"}}, {"b": {"y": 2.5}, "c": [True]}, None, {"c": []}],
    "lists": [[{"k": 1}], [], [{"j": "v"}], None],
}


def test_plain_rows_unify_as_arrow_does():
    pytest.importorskip("datasets")
    assert plain_rows(UNIFIED) == [dict(row) for row in to_dataset(UNIFIED)]
    assert plain_rows(UNIFIED)[0]["nested"] == {"a": 1, "b": {"x": "s", "y": None}, "c": None}


@pytest.mark.parametrize(
    "column",
    [[1, 2.5], [{"a": 1}, {"a": "x"}], [{}], [2**63], [True, 1], [(1, 2)]],
    ids=["int and float", "nested mixed", "empty dict", "past int64", "bool and int", "tuple"],
)
def test_what_only_arrow_can_say_is_left_to_it(column):
    assert plain_rows({"field": column}) is None


@pytest.mark.slow
def test_an_eval_imports_neither_datasets_nor_the_sdk(echo_url):
    with serving(ChatServer(scripted)) as chat:
        env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
        result = subprocess.run(
            [sys.executable, "-X", "importtime", str(orlgen_script()), "eval", "generated/echo.py", "--base-url",
             chat.url, "--model", "scripted", "-n", "2", "--split", "train", "--env-url", echo_url],
            capture_output=True, text=True, cwd=REPO, env=env, timeout=300,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    imported = set(re.findall(r"^import time:.*\|\s*([\w.]+)$", result.stderr, re.MULTILINE))
    assert "orlgen.eval.command" in imported and "2 rollouts" in result.stdout
    assert not {name for name in imported if name.split(".")[0] in ("datasets", "openreward", "pyarrow")}
