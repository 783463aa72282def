"""orlgen as it will be published (issue 44 item 1): `python -m build` makes an sdist and, from it,
a wheel that holds every module and template of the source with complete metadata. The GitHub
Action's install step (action.yml, run as the runner runs it) installs that source tree with
`[generate]` into a fresh venv, offline from a cached wheelhouse (tests/support/release.py); the
install answers `orlgen --version`, runs the demo (a snapshot of the echo env and a scripted
rollout through the module it generated), renders byte for byte what the source tree's orlgen
renders for every checked-in env, and passes `orlgen check` on that output.

Nothing is faked: the build is the real frontend and backend, pip builds and installs as a user's
does, the venv's own console script and interpreter run in a directory holding no orlgen source,
and the comparison is of files on disk.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
import yaml

from bench.install import ok, run
from tests.support.cli import run_orlgen
from tests.support.modules import REPO
from tests.support.release import Built, build, project_files, wheelhouse

VERSION = next(
    line.split('"')[1] for line in (REPO / "orlgen" / "__init__.py").read_text().splitlines() if "__version__" in line
)
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    """The sdist and the wheel, built once for this module's tests."""
    return build(tmp_path_factory.mktemp("release"))


def _source_files(tmp: Path) -> set[str]:
    """Every file the wheel must hold, by its path in the wheel: orlgen's modules, py.typed, and
    the templates (TRL's from the top-level templates/, through the orlgen/templates link)."""
    source = project_files(tmp / "listed")
    wanted = {
        path.relative_to(source).as_posix()
        for path in (source / "orlgen").rglob("*")
        if path.is_file() and (path.suffix in (".py", ".jinja") or path.name == "py.typed")
    }
    return wanted | {f"orlgen/templates/{path.name}" for path in (source / "templates").glob("*.jinja")}


@pytest.mark.slow
def test_the_wheel_holds_every_module_and_template_with_its_metadata(built, tmp_path):
    _, sdist, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = Parser().parsestr(archive.read(f"orlgen-{VERSION}.dist-info/METADATA").decode())
    missing = _source_files(tmp_path) - names
    assert missing == set(), f"not in the wheel (pyproject's packages or package-data?): {sorted(missing)}"
    assert f"orlgen-{VERSION}.dist-info/licenses/LICENSE" in names
    assert {name.split("/")[0] for name in names} == {"orlgen", f"orlgen-{VERSION}.dist-info"}

    assert (metadata["Name"], metadata["Version"]) == ("orlgen", VERSION)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Requires-Python"] == PROJECT["requires-python"]
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata.get_payload().strip() == (REPO / "README.md").read_text(encoding="utf-8").strip()
    assert sorted(metadata.get_all("Project-URL")) == sorted(f"{k}, {v}" for k, v in PROJECT["urls"].items())
    runtime = {need for need in metadata.get_all("Requires-Dist") if "extra ==" not in need}
    assert runtime == set(PROJECT["dependencies"])
    assert set(metadata.get_all("Provides-Extra")) == set(PROJECT["optional-dependencies"])

    with tarfile.open(sdist) as archive:
        inside = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "orlgen/__init__.py"} <= inside
    assert not [name for name in inside if name.startswith("tests/")]


def _workdir(tmp: Path, name: str) -> Path:
    """The project's config, example envs and checked-in snapshots, and no orlgen source."""
    work = tmp / name
    work.mkdir()
    shutil.copy2(REPO / "pyproject.toml", work / "pyproject.toml")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("examples", "generated"):
        shutil.copytree(REPO / folder, work / folder, ignore=ignore)
    return work


def _child_env(tmp: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("ORLGEN_", "PYTHON"))}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # no verdict cache shared with another run: every file rendered
    return env


def _action_install(tmp: Path, checkout: Path, requirement: str) -> subprocess.CompletedProcess[str]:
    """The action's install step as the runner runs it (`bash -eo pipefail`), its expressions set
    as `uses:` sets them: `checkout` is the action's own tree, `requirement` its `orlgen` input.
    pip reads the wheelhouse alone (PIP_NO_INDEX, PIP_FIND_LINKS) and leaves bytecode to the
    imports that need it (PIP_NO_COMPILE: most of the install's CPU otherwise). The venv is
    `$RUNNER_TEMP/orlgen-venv`, RUNNER_TEMP being `tmp/runner`."""
    (step,) = [step for step in ACTION["runs"]["steps"] if step.get("name") == "Install orlgen"]
    values = {"${{ inputs.orlgen }}": requirement, "${{ github.action_path }}": str(checkout)}
    env = {**_child_env(tmp), "RUNNER_TEMP": str(tmp / "runner"), "PIP_NO_INDEX": "1"}
    env["PIP_NO_COMPILE"] = "0"  # pip reads a store-false option's variable inverted: "0" is --no-compile
    env["PIP_FIND_LINKS"] = str(wheelhouse("generate"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # setup-python's python 3.11
    env.update({name: values[expression] for name, expression in step["env"].items()})
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]]
    return ok(subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=1800))


@pytest.mark.slow
def test_the_action_installs_the_wheel_which_runs_and_renders_what_the_source_renders(built, tmp_path):
    """The wheel through the action's `orlgen` input (its default, the action's own checkout, is
    the same tree the sdist holds, built by pip instead of `python -m build`)."""
    _action_install(tmp_path, built.source, f"orlgen[generate] @ {built.wheel.as_uri()}")
    python = tmp_path / "runner" / "orlgen-venv" / "bin" / "python"
    orlgen = python.parent / "orlgen"
    env = _child_env(tmp_path)

    version = ok(run(orlgen, "--version", timeout=120, cwd=tmp_path, env=env))
    assert VERSION in version.stdout

    # The demo from the wheel: `orlgen snapshot` of examples.echo:Echo, then one scripted rollout.
    demo = _workdir(tmp_path, "demo")
    played = ok(run(python, "examples/demo.py", tmp_path / "demo-out", timeout=600, cwd=demo, env=env))
    assert "get_reward() → 1.0" in played.stdout, played.stdout
    located = ok(run(python, "-c", "import orlgen; print(orlgen.__file__)", timeout=60, cwd=demo, env=env))
    assert located.stdout.startswith(str(tmp_path / "runner"))  # the installed orlgen, not a source tree

    # Every checked-in env rendered by the wheel's orlgen and by the source tree's, side by side.
    installed, editable = _workdir(tmp_path, "installed"), _workdir(tmp_path, "editable")
    ok(run(orlgen, "generate", "--no-cache", timeout=900, cwd=installed, env=env))
    by_source = run_orlgen("generate", "--no-cache", cwd=editable, env=env, timeout=900)
    assert by_source.returncode == 0, by_source.stderr
    compared = filecmp.dircmp(installed / "generated", editable / "generated", ignore=["__pycache__"])
    assert (compared.left_only, compared.right_only) == ([], [])
    same, different, errors = filecmp.cmpfiles(
        installed / "generated", editable / "generated", compared.common_files, shallow=False
    )
    assert (different, errors) == ([], []) and len(same) >= 20
    checked = run(orlgen, "check", "--no-cache", timeout=900, cwd=installed, env=env)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
