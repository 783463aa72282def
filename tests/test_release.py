"""orlgen as it will be published (issue 44 item 1): `python -m build` makes an sdist and, from it,
a wheel that holds every module and template of the source with complete metadata; the wheel
installed with `[generate]` in a fresh venv (offline, from a cached wheelhouse:
tests/support/release.py) answers `orlgen --version`, runs the demo (a snapshot of the echo env
and a scripted rollout through the module it generated), renders byte for byte what the source
tree's orlgen renders for every checked-in env, and passes `orlgen check` on that output.

Nothing is faked: the build is the real frontend and backend, the venv's own console script and
interpreter run in a directory holding no orlgen source, and the comparison is of files on disk.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from bench.install import ok, run
from tests.support.cli import run_orlgen
from tests.support.modules import REPO
from tests.support.release import build, install, project_files

VERSION = next(
    line.split('"')[1] for line in (REPO / "orlgen" / "__init__.py").read_text().splitlines() if "__version__" in line
)
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
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
    sdist, wheel = built
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


@pytest.mark.slow
def test_the_generate_install_runs_the_cli_and_renders_what_the_source_renders(built, tmp_path):
    _, wheel = built
    venv = install(tmp_path / "venv", wheel, "generate")
    orlgen = venv.python.parent / "orlgen"
    env = _child_env(tmp_path)

    version = ok(run(orlgen, "--version", timeout=120, cwd=tmp_path, env=env))
    assert VERSION in version.stdout

    # The demo from the wheel: `orlgen snapshot` of examples.echo:Echo, then one scripted rollout.
    demo = _workdir(tmp_path, "demo")
    played = ok(run(venv.python, "examples/demo.py", tmp_path / "demo-out", timeout=600, cwd=demo, env=env))
    assert "get_reward() → 1.0" in played.stdout, played.stdout
    located = ok(run(venv.python, "-c", "import orlgen; print(orlgen.__file__)", timeout=60, cwd=demo, env=env))
    assert located.stdout.startswith(str(tmp_path / "venv"))  # the wheel's orlgen, not a source tree

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
