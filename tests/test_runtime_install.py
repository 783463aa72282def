"""`pip install orlgen` is the runtime alone: a fresh venv gets orlgen's wheel with the `train`
extra (and the local `torch==2.13.0`), holds none of the generator's toolchain and nothing of
the openreward SDK or the LLM vendors' clients it brings, answers `orlgen snapshot` with the one
line that says what to install, and trains a GRPO step on the checked-in `generated/echo.py`
against its env served on a loopback port by this process (the venv has no ORS server), with
nothing importing `openreward`. And `orlgen[train]` resolves beside `verifiers==0.4.0`.

Nothing is faked: the wheel is built from a copy of the source (non-editable), pip resolves the
runtime's real requirement set (its cache makes that quick), and the step runs in the venv's own
interpreter from a directory holding only `generated/` and `examples/`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from orlgen.serve import ServerProcess

from bench.install import ok, run, venv, wheel
from tests.support.cli import run_orlgen
from tests.support.models.tiny_qwen3 import tiny_qwen3_dir
from tests.support.modules import REPO

# Installed by datamodel-code-generator, black and the other pins of `orlgen[generate]`.
GENERATOR = ("datamodel-code-generator", "black", "isort", "genson", "inflect")
INSTALL_LINE = "pip install 'orlgen[generate]'"
# Brought by the openreward SDK, none of it needed to train: absent from the runtime's venv.
SDK_AND_VENDORS = ("openreward", "anthropic", "openai", "google-genai")


def _venv(tmp: Path, wheel: Path) -> Path:
    """A fresh venv with `orlgen[train]` from the wheel and the local torch; its interpreter.
    `--no-compile` leaves bytecode to the imports that need it: compiling all of torch and
    transformers up front is most of the install's CPU time, and none of what it installs."""
    return venv(tmp / "venv", "torch==2.13.0", f"orlgen[train] @ {wheel.as_uri()}", compile=False)


def _workdir(tmp: Path) -> Path:
    """A directory with the checked-in modules and the example envs, and no orlgen source."""
    work = tmp / "work"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("generated", "examples"):
        shutil.copytree(REPO / name, work / name, ignore=ignore)
    shutil.copy2(REPO / "tests" / "support" / "runtime_only_step.py", work / "runtime_only_step.py")
    return work


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory) -> Path:
    """orlgen's wheel, built once for both slow tests: `pip wheel` of the source is the same
    input for each, and the build costs seconds of a child pip."""
    return wheel(tmp_path_factory.mktemp("wheel"))


def _child_env() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ORLGEN_", "PYTHON"))}
    env["TRL_EXPERIMENTAL_SILENCE"] = "1"
    return env


def test_cli_names_what_to_install_before_importing_it(tmp_path):
    """Fault injection: orlgen's metadata, first on the path, declares a pin the venv does not
    hold and a tool it lacks. Every command answers with the one line, before click loads."""
    info = tmp_path / "orlgen-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: orlgen\nVersion: 0.1.0\nProvides-Extra: generate\n"
        "Requires-Dist: pydantic>=2.7\n"
        'Requires-Dist: click>=8.1; extra == "generate"\n'
        'Requires-Dist: black==0.0.1; extra == "generate"\n'
        'Requires-Dist: no-such-toolchain==1.0; extra == "generate"\n'
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for args in (["check"], ["--version"], ["snapshot", "examples.echo:Echo", "--out", str(tmp_path / "out")]):
        result = run_orlgen(*args, cwd=tmp_path, env=env, timeout=60)
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr == (
            f"orlgen: error: the generator needs black==0.0.1 (found {version('black')}), "
            f"no-such-toolchain==1.0 (missing): {INSTALL_LINE}\n"
        )
    assert not (tmp_path / "out").exists()


def test_the_shipped_pre_commit_hook_installs_the_generator():
    """pre-commit installs a hook's repository with `pip install .` plus the hook's
    `additional_dependencies`, run in that repository: `.[generate]` is the extra, by path."""
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["entry"] == "orlgen check" and hook["additional_dependencies"] == [".[generate]"]
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "black==26.10.1" in extras["generate"]


@pytest.mark.slow
def test_runtime_installs_alone_and_trains_a_step(built_wheel, tmp_path):
    model = tiny_qwen3_dir()
    python = _venv(tmp_path, built_wheel)
    work, env = _workdir(tmp_path), _child_env()

    absent = ok(
        run(
            python, "-c",
            "import json, sys\n"
            "from importlib.metadata import PackageNotFoundError, requires, version\n"
            "def found(name):\n"
            "    try:\n"
            "        return version(name)\n"
            "    except PackageNotFoundError:\n"
            "        return None\n"
            "from importlib.metadata import distributions\n"
            "telemetry = sorted(d.metadata['Name'] for d in distributions() if d.metadata['Name'].startswith('opentelemetry'))\n"
            "print(json.dumps({'found': {n: found(n) for n in sys.argv[1:]}, 'requires': requires('orlgen'),"
            " 'opentelemetry': telemetry}))",
            *GENERATOR, *SDK_AND_VENDORS, timeout=60, cwd=work, env=env,
        )
    )  # fmt: skip
    facts = json.loads(absent.stdout)
    assert facts["found"] == dict.fromkeys(GENERATOR + SDK_AND_VENDORS)
    assert facts["opentelemetry"] == []
    runtime_needs = {line.split(";")[0] for line in facts["requires"] if "extra ==" not in line}
    assert runtime_needs == set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    assert not any(need.startswith("openreward") for need in runtime_needs)

    # The venv's own console script (`python -m orlgen` goes through the same entry.main).
    refused = run(python.parent / "orlgen", "snapshot", "examples.echo:Echo", timeout=60, cwd=work, env=env)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr.startswith("orlgen: error: the generator needs ")
    assert refused.stderr.endswith(f"(missing): {INSTALL_LINE}\n") and len(refused.stderr.splitlines()) == 1
    for pin in ("genson==1.4.0", "datamodel-code-generator==0.89.0", "black==26.10.1"):
        assert f"{pin} (missing)" in refused.stderr
    assert sorted(path.name for path in (work / "generated").iterdir()) == sorted(
        path.name for path in (REPO / "generated").iterdir() if path.name != "__pycache__"
    )  # nothing written

    with ServerProcess("examples.echo:Echo") as server:  # served from this venv, which has the SDK
        step = run(python, "runtime_only_step.py", model, tmp_path / "out", server.url, timeout=600, cwd=work, env=env)
    result = json.loads(ok(step).stdout.strip().splitlines()[-1])
    assert result["orlgen"].startswith(str(tmp_path / "venv"))  # the wheel's orlgen, not the source tree
    assert (result["steps"], result["tokens"] > 0, result["openreward_imported"]) == (1, True, False)
    assert all(name == "orlgen" or name.startswith("orlgen.runtime") for name in result["modules"])


@pytest.mark.slow
def test_train_extra_resolves_beside_verifiers(built_wheel, tmp_path):
    """verifiers 0.4 pins mcp 2, which needs sse-starlette>=3; the openreward SDK pinned 2.3.6, so
    `orlgen[train]` and verifiers could not share a venv while the runtime depended on it. pip
    resolves against PyPI for a fresh venv (`--dry-run`: nothing is installed)."""
    ok(run(sys.executable, "-m", "venv", "--without-pip", tmp_path / "venv", timeout=120))
    resolved = run(
        sys.executable, "-m", "pip", "--python", tmp_path / "venv" / "bin" / "python", "install", "--dry-run",
        f"orlgen[train] @ {built_wheel.as_uri()}", "verifiers==0.4.0", "torch==2.13.0", timeout=900,
    )  # fmt: skip
    assert resolved.returncode == 0, resolved.stderr[-3000:]
    (would,) = [line for line in resolved.stdout.splitlines() if line.startswith("Would install")]
    assert " verifiers-0.4.0 " in f"{would} " and " trl-1.16.0 " in f"{would} "
    assert " openreward-" not in would
