"""The runtime contract (docs/design.md "Runtime contract"): a generated module hands the runtime
one public `EnvSpec`, and says at import, in one line, which orlgen to install when the installed
runtime cannot run it, whether that runtime is newer, older, or older than the check itself."""

from __future__ import annotations

import inspect
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from orlgen import __version__
from orlgen.runtime import EnvAdapter, EnvSpec, contract
from orlgen.runtime.contract import CONTRACT

from tests.support.modules import REPO, load_module

GENERATED = REPO / "generated"
CALL = f'require_contract({CONTRACT}, __file__, "{__version__}")'
REGENERATE = "or regenerate it with `orlgen generate`"


def _with_contract(tmp_path: Path, module: str, number: int, generated_by: str) -> Path:
    """A checked-in module as a later orlgen would have written it, for contract `number`."""
    text = (GENERATED / f"{module}.py").read_text()
    assert CALL in text
    path = tmp_path / f"{module}.py"
    path.write_text(text.replace(CALL, f'require_contract({number}, __file__, "{generated_by}")'))
    return path


@pytest.mark.parametrize("module", ["echo", "helpdesk", "support_mix"])
def test_a_module_generated_now_imports_and_names_its_contract(module):
    text = (GENERATED / f"{module}.py").read_text()
    assert text.count(CALL) == 1
    imported = __import__(f"generated.{module}", fromlist=["environment_factory"])
    assert imported.reward_funcs is not imported.reward_funcs  # a new list on every access
    assert callable(imported.build_dataset)


@pytest.mark.parametrize("module", ["echo", "support_mix"])
def test_a_module_for_a_newer_contract_fails_to_import_naming_the_orlgen_to_install(module, tmp_path):
    path = _with_contract(tmp_path, module, CONTRACT + 1, "9.1.0")
    with pytest.raises(ImportError) as caught:
        load_module(path)
    assert str(caught.value) == (
        f"{path} needs orlgen's runtime contract {CONTRACT + 1}; orlgen {__version__} is installed and "
        f"speaks 2 to {CONTRACT}: pip install 'orlgen>=9.1.0' {REGENERATE}"  # 0.3 still runs contract-2 modules
    )


def test_a_runtime_that_dropped_the_modules_contract_names_the_orlgen_that_wrote_it(monkeypatch):
    """A newer runtime, faked by narrowing the supported range (the one place it is kept)."""
    monkeypatch.setitem(contract.SUPPORTED, "trl", range(CONTRACT + 1, CONTRACT + 3))
    with pytest.raises(ImportError) as caught:
        load_module(GENERATED / "echo.py")
    assert str(caught.value) == (
        f"{GENERATED / 'echo.py'} needs orlgen's runtime contract {CONTRACT}; orlgen {__version__} is installed "
        f"and speaks {CONTRACT + 1} to {CONTRACT + 2}: pip install 'orlgen=={__version__}' {REGENERATE}"
    )


def test_a_runtime_older_than_the_contract_check_gets_the_same_one_line(tmp_path):
    """orlgen < 0.2 has no `orlgen.runtime.contract`: a copy of this runtime without it stands in,
    found first on the path. The module's own fallback speaks before any `cannot import name`."""
    old = tmp_path / "old"
    shutil.copytree(REPO / "orlgen", old / "orlgen", ignore=shutil.ignore_patterns("__pycache__", "templates"))
    (old / "orlgen" / "runtime" / "contract.py").unlink()
    module = tmp_path / "echo.py"
    shutil.copy(GENERATED / "echo.py", module)
    env = {"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(old), "HOME": str(tmp_path)}
    ran = subprocess.run([sys.executable, str(module)], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == (
        f"ImportError: {module} needs orlgen's runtime contract {CONTRACT}; the installed orlgen speaks 1: "
        f"pip install 'orlgen>={__version__}' {REGENERATE}"
    )


def test_a_module_of_contract_1_fails_at_its_class_with_one_line():
    """A module generated before EnvSpec set private class attributes and has no check of its own."""
    with pytest.raises(ImportError, match=r"^old\.echo\.EchoEnv has no EnvSpec: .*pip install 'orlgen<0\.2'"):
        type("EchoEnv", (EnvAdapter,), {"__module__": "old.echo", "_env_var": "ORLGEN_ECHO_URL"})


def test_the_spec_is_the_modules_public_record_of_its_environment(echo_module):
    spec = echo_module.SPEC
    assert isinstance(spec, EnvSpec) and echo_module.EchoEnv.spec is spec
    assert spec.target == echo_module.TARGET and spec.dataset.num_tasks == echo_module.SPLITS
    assert tuple(spec.tool_fingerprints) == echo_module.TOOLS == ("echo", "hint")
    assert spec.offered_on == {"hint": (("train", 0), ("train", 2))}
    with pytest.raises(AttributeError):
        spec.env_var = "OTHER"  # frozen: a reviewer's record, not a setting


def test_build_dataset_keeps_a_reviewable_signature_and_pickles_by_name(echo_module):
    signature = inspect.signature(echo_module.build_dataset)
    assert list(signature.parameters) == ["split", "num_tasks", "indices", "base_url", "api_key"]
    assert signature.parameters["split"].default == "train"
    assert "`datasets.Dataset` of tasks" in echo_module.build_dataset.__doc__
    assert pickle.loads(pickle.dumps(echo_module.build_dataset)) is echo_module.build_dataset


def test_a_module_whose_tools_take_no_parameters_has_no_models_and_imports(tmp_path):
    """Before TaskSpec was dropped every module had one model; now a module may have none."""
    from orlgen.render.jobs import render_module
    from orlgen.snapshot.model import Snapshot, Split, Target, Tool

    snapshot = Snapshot(
        name="bare",
        target=Target(kind="url", value="http://127.0.0.1:9", env="bare"),
        splits=[Split(name="train", num_tasks=0)],
        tools=[Tool(name="ping", description="Ping.", input_schema=None, shared=True)],
        terminal_tool=None,
        probed_tasks=[],
        tasks={},
        task_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
    ).canonical()
    path = tmp_path / "bare.py"
    path.write_text(render_module(snapshot))
    module = load_module(path)
    assert "BaseModel" not in path.read_text() and module.TOOLS == ("ping",)
    assert inspect.signature(module.BareEnv.ping).return_annotation == "ToolOutput"
