"""Verification before writing: a module that would not work is never written.

The broken modules here come from template overrides a project might ship, since sanitised
schemas no longer produce broken modules (the fuzz suite checks that)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from orlgen.render.verify import samples
from orlgen.runtime.trl.tools import tool_methods
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import REPO

ECHO = REPO / "generated" / "echo.snapshot.json"
METHOD = (REPO / "templates" / "tool_method.py.jinja").read_text()


def project(tmp_path: Path, tool_method: str) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.orlgen]\nout = "gen"\ntemplates = "tpl"\n')
    (tmp_path / "tpl").mkdir()
    (tmp_path / "tpl" / "tool_method.py.jinja").write_text(tool_method)
    (tmp_path / "gen").mkdir()
    shutil.copy(ECHO, tmp_path / "gen" / ECHO.name)
    shutil.copy(ECHO.with_name("echo.tasks.jsonl"), tmp_path / "gen")
    return tmp_path / "gen"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("broken", "cause"),
    [
        (METHOD.replace("{{ tool.docstring }}", ""), "get_json_schema cannot read the method"),
        (
            METHOD.replace("{{ tool.docstring }}", "{{ tool.docstring }}\n        import nowhere_to_be_found"),
            "calling it with a valid payload failed: ModuleNotFoundError",
        ),
        ("    raise_at_import = 1 / 0\n", "does not import"),
    ],
    ids=["no-docstring", "call-fails", "import-fails"],
)
def test_a_module_that_does_not_work_is_not_written(tmp_path, broken, cause):
    gen = project(tmp_path, broken)
    result = invoke("generate", str(gen))
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1 and cause in result.stderr
    assert "echo.py" in result.stderr
    assert not (gen / "echo.py").exists()


@pytest.mark.slow
def test_a_working_override_is_written(tmp_path):
    gen = project(tmp_path, METHOD)
    result = invoke("generate", str(gen))
    assert result.exit_code == 0, result.stderr
    assert (gen / "echo.py").read_bytes() == (REPO / "generated" / "echo.py").read_bytes()


def test_samples_satisfy_the_schema():
    """The payloads the verifier sends are ones the server would accept (checked with pydantic
    against the helpdesk's own params models, which the server validates with)."""
    from examples import helpdesk

    built = samples(load(REPO / "generated" / "helpdesk.snapshot.json"))
    assert set(built) == {
        "cancel_order",
        "escalate",
        "get_order",
        "issue_refund",
        "search_orders",
        "send_reply",
        "submit_resolution",
        "update_shipping",
    }
    models = {name: getattr(helpdesk.Helpdesk, name).__annotations__.get("params") for name in built}
    for name, payload in built.items():
        model = models[name]
        if isinstance(model, str):
            model = vars(helpdesk)[model]
        model.model_validate(payload)


@pytest.mark.parametrize(
    ("schema", "inside"),
    [
        ({"type": "integer", "exclusiveMaximum": 0}, lambda v: v < 0),
        ({"type": "number", "exclusiveMinimum": 0, "maximum": 0.5}, lambda v: 0 < v <= 0.5),
        ({"type": "integer", "multipleOf": 5, "minimum": 1}, lambda v: v >= 1 and v % 5 == 0),
    ],
)
def test_sampled_numbers_respect_their_bounds(schema, inside):
    from orlgen.snapshot.model import Snapshot, Split, Target, Tool

    tool = Tool(
        name="t",
        description="T.",
        shared=True,
        input_schema={"type": "object", "properties": {"x": schema}, "required": ["x"]},
    )
    snap = Snapshot(
        name="s",
        target=Target(kind="url", value="http://127.0.0.1:1", env="s"),
        splits=[Split(name="train", num_tasks=0)],
        tools=[tool],
        terminal_tool=None,
        probed_tasks=[],
        tasks={},
        task_schema={"type": "object"},
    )
    assert inside(samples(snap)["t"]["x"])


def test_the_child_reads_every_checked_in_method_as_transformers_does():
    """The child loads transformers' `get_json_schema` without importing transformers (most of
    its CPU): on every tool of every checked-in module it must read what the package reads."""
    from orlgen.plan.json_schema import _standalone
    from orlgen.runtime import EnvAdapter
    from transformers.utils import get_json_schema

    from tests.support.modules import load_module, trl_modules

    standalone = _standalone()
    compared = 0
    for path in trl_modules():
        module = load_module(path)
        for cls in {c for c in vars(module).values() if isinstance(c, type) and issubclass(c, EnvAdapter)} - {
            EnvAdapter
        }:
            methods = {m.__name__: m for m in tool_methods(cls)}  # as the child finds them
            for wire in module.TOOLS:
                assert standalone(methods[wire]) == get_json_schema(methods[wire]), f"{path.name}: {wire}"
                compared += 1
    assert compared >= 20
