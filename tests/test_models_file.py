"""One models file per environment: an env rendered for several trainers keeps its params models,
`SNAPSHOT_SHA256`, `TARGET`, `SPLITS` and `SPEC` once, in `<env>_models.py`, and each trainer's
module binds them from it (through `orlgen.runtime.siblings`, with or without a package). A TRL-only
env keeps one self-contained module. The plan and the models are computed once per env."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from orlgen.plan.reserved import TRL_ADAPTER_NAMES
from orlgen.render import jobs as render
from orlgen.runtime.trl.adapter import STATE_ATTRIBUTES, EnvAdapter
from orlgen.snapshot.model import load

from tests.support import cli
from tests.support.modules import REPO

GENERATED = REPO / "generated"
THREE = ["trl", "verifiers", "skyrl"]
MODULES = ("helpdesk.py", "helpdesk_verifiers.py", "helpdesk_skyrl.py")


def _project(root: Path, helpdesk_trainers: list[str]) -> Path:
    """helpdesk (for `helpdesk_trainers`) and echo (TRL only), as generated/ holds their snapshots."""
    (root / "pyproject.toml").write_text(
        '[tool.orlgen]\nout = "generated"\n\n[[tool.orlgen.envs]]\ntarget = "examples.echo:Echo"\n\n'
        f'[[tool.orlgen.envs]]\ntarget = "examples.helpdesk:Helpdesk"\ntrainers = {json.dumps(helpdesk_trainers)}\n',
        encoding="utf-8",
    )
    out = root / "generated"
    out.mkdir(exist_ok=True)
    for env in ("echo", "helpdesk"):
        for suffix in (".snapshot.json", ".tasks.jsonl"):
            shutil.copyfile(GENERATED / f"{env}{suffix}", out / f"{env}{suffix}")
    return out


def _generate(out: Path) -> None:
    result = cli.invoke("generate", "--no-cache", out)
    assert result.exit_code == 0, result.output


def _set_trainers(root: Path, trainers: list[str]) -> None:
    config = root / "pyproject.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"trainers = \[.*\]", f"trainers = {json.dumps(trainers)}", text), encoding="utf-8")


@pytest.mark.slow
def test_an_env_with_several_trainers_holds_its_models_once(tmp_path: Path):
    out = _project(tmp_path, THREE)
    _generate(out)
    texts = {name: (out / name).read_text(encoding="utf-8") for name in (*MODULES, "helpdesk_models.py")}
    for name in MODULES:
        assert "(BaseModel)" not in texts[name] and "SPEC = EnvSpec(" not in texts[name], name
        assert 'siblings(__package__, __file__, "helpdesk_models")' in texts[name], name
    assert sum(text.count("class IssueRefundParams(BaseModel)") for text in texts.values()) == 1
    assert texts["helpdesk_models.py"].count("SPEC = EnvSpec(") == 1
    # a TRL-only env keeps one module, byte for byte as before
    assert not (out / "echo_models.py").exists()
    assert (out / "echo.py").read_bytes() == (GENERATED / "echo.py").read_bytes()


@pytest.mark.slow
def test_a_change_to_a_parameters_schema_is_one_hunk(tmp_path: Path):
    """A parameter's description reaches its params model (a `Field(description=...)`) in one file."""
    out = _project(tmp_path, THREE)
    path = out / "helpdesk.snapshot.json"
    snapshot = load(path)
    tools = []
    for tool in snapshot.tools:
        if tool.name == "escalate":
            schema = json.loads(json.dumps(tool.input_schema))
            schema["properties"]["reason"]["description"] = "Why a senior agent must look at it."
            tool = tool.model_copy(update={"input_schema": schema})
        tools.append(tool)
    for file, data in snapshot.model_copy(update={"tools": tools}).canonical().files(path).items():
        file.write_bytes(data)
    _generate(out)
    field = 'Field(description="Why a senior agent must look at it."'
    holding = [p.name for p in sorted(out.glob("helpdesk*.py")) if field in p.read_text(encoding="utf-8")]
    assert holding == ["helpdesk_models.py"]


@pytest.mark.slow
def test_check_owns_the_models_file(tmp_path: Path):
    """A hand edit of the models file fails `check`; dropping one of three trainers keeps it (the
    other two import it); dropping to one trainer makes it an orphan `generate` removes, and the
    TRL module whole again."""
    out = _project(tmp_path, THREE)
    _generate(out)
    models = out / "helpdesk_models.py"
    original = models.read_bytes()
    models.write_bytes(original.replace(b"Why the ticket needs a senior agent.", b"Why not."))
    result = cli.invoke("check", "--no-cache", out)
    assert result.exit_code == 1 and "helpdesk_models.py: hand-edited" in result.output
    models.write_bytes(original)
    _set_trainers(tmp_path, ["trl", "verifiers"])
    _generate(out)
    assert models.read_bytes() == original and not (out / "helpdesk_skyrl.py").exists()
    assert cli.invoke("check", "--no-cache", out).exit_code == 0
    _set_trainers(tmp_path, ["trl"])
    result = cli.invoke("check", "--no-cache", out)
    assert result.exit_code == 1 and "helpdesk_models.py: orphaned" in result.output
    _generate(out)
    assert not models.exists() and "class IssueRefundParams(BaseModel)" in (out / "helpdesk.py").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["package", "top-level"])
def test_the_trl_module_finds_its_models_with_or_without_a_package(tmp_path: Path, how: str):
    out = _project(tmp_path, THREE)
    _generate(out)
    module, path = ("generated.helpdesk", tmp_path) if how == "package" else ("helpdesk", out)
    probe = f"import {module} as m; print(m.SPEC is m.helpdesk_models.SPEC, m.HelpdeskEnv.spec is m.SPEC)"
    ran = subprocess.run([sys.executable, "-c", probe], cwd=path, capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["True", "True"]


def test_the_plan_and_the_models_are_computed_once_per_env(monkeypatch: pytest.MonkeyPatch):
    snapshot = load(GENERATED / "helpdesk.snapshot.json", rows=False)
    calls: list[str] = []
    planned, modelled = render.plan, render.models
    monkeypatch.setattr(render, "plan", lambda s: calls.append("plan") or planned(s))
    monkeypatch.setattr(render, "models", lambda p: calls.append("models") or modelled(p))
    found = render.jobs([(GENERATED / "helpdesk.snapshot.json", snapshot)], trainers={"helpdesk": THREE})
    assert [job.path.name for job in found] == [*MODULES, "helpdesk_models.py"]
    for job in found:
        job.render()
    assert calls == ["plan", "models"]


def test_the_trl_reserved_names_are_what_the_adapter_exposes():
    """The plan reserves TRL's names as data (it imports no TRL shim); they must be what a
    generated class really inherits from `EnvAdapter`, so the data cannot go stale."""
    exposed = (set(dir(EnvAdapter)) - set(dir(object))) | set(STATE_ATTRIBUTES) | {"reset", "get_reward", "spec"}
    assert TRL_ADAPTER_NAMES == exposed
