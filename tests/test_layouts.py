"""Generated code in every layout a project uses: a mixture imported with or without its
package, and `int | float` hints that a user's ruff (PYI rules) accepts as they are."""

from __future__ import annotations

import shutil
import subprocess
import sys

from orlgen.render.jobs import render_module
from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Tool
from transformers.utils import get_json_schema

from tests.support.modules import REPO
from tests.test_fuzz import import_source


def test_a_mixture_imports_as_a_top_level_module_too(tmp_path):
    shutil.copytree(REPO / "generated", tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    code = "import support_mix; print(sorted(support_mix.environments), support_mix.environments['echo'].__module__)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path / "generated", capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["['echo',", "'helpdesk']", "echo"]


def test_a_mixture_loaded_from_its_file_finds_its_members(helpdesk_module):
    from tests.support.modules import load_module

    mixture = load_module(REPO / "generated" / "support_mix.py")
    assert mixture.environments["helpdesk"].__name__ == "HelpdeskEnv"
    assert mixture.environments["helpdesk"].spec.target == helpdesk_module.TARGET


def test_an_int_or_float_parameter_keeps_int_and_passes_pyi041(tmp_path):
    schema = {"type": "object", "properties": {"amount": {"type": ["string", "integer", "number"]}}}
    snapshot = Snapshot(
        name="numbers",
        target=Target(kind="url", value="http://127.0.0.1:9", env="numbers"),
        splits=[Split(name="train", num_tasks=0)],
        tools=[Tool(name="pay", description="Pay.", input_schema=schema, shared=True)],
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="none", tasks=[])},
        task_schema={"type": "object"},
    ).canonical()
    source = render_module(snapshot)
    assert "amount: str | int | float" in source
    path = tmp_path / "numbers.py"
    path.write_text(source)
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--extend-select", "I,PYI", str(path)]
    linted = subprocess.run(ruff, capture_output=True, text=True, cwd=tmp_path)  # orlgen: third-party, as for users
    assert linted.returncode == 0, linted.stdout
    module = import_source(source, tmp_path)
    seen = get_json_schema(module.NumbersEnv.pay)["function"]["parameters"]["properties"]["amount"]
    assert sorted(seen["type"]) == ["integer", "number", "string"]  # int kept: the model sees "integer"
