"""Same snapshot + same pinned versions → same bytes: whatever the order of the snapshot's lists,
the hash seed, the working directory or the user's formatter configuration."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from orlgen.render import jobs as render
from orlgen.snapshot import model as snapshot
from orlgen.snapshot.model import Snapshot

from tests.support.cli import run_orlgen

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "generated"
# TRL-only envs, rendered from their snapshots alone (helpdesk has three trainers: its TRL module imports
# a models file, so it is rendered from snapshots only with the project config: test_models_file)
NAMES = ("echo", "hostile")

USER_FORMATTER_CONFIG = """\
[tool.black]
line-length = 40
skip-string-normalization = true
skip-magic-trailing-comma = true
target-version = ["py38"]

[tool.isort]
profile = "google"
line_length = 40
force_single_line = true
"""


@pytest.fixture(scope="module", params=NAMES)
def original(request) -> Snapshot:
    return snapshot.load(GENERATED / f"{request.param}.snapshot.json")


def reorder(base: Snapshot, seed: int, *, splits: bool = False) -> Snapshot:
    """The same content with tools, each tool's `offered_on`, probed tasks, each split's tasks and
    the split → tasks mapping in another order (and, with `splits`, the splits list too)."""
    rng = random.Random(seed)

    def mix(items):
        items = list(items)
        before = list(items)
        rng.shuffle(items)
        if items == before:
            items.reverse()
        return items

    update = {
        "tools": mix(t.model_copy(update={"offered_on": mix(t.offered_on)}) for t in base.tools),
        "probed_tasks": mix(base.probed_tasks),
        "tasks": dict(mix((split, st.model_copy(update={"tasks": mix(st.tasks)})) for split, st in base.tasks.items())),
    }
    if splits:
        update["splits"] = mix(base.splits)
    return base.model_copy(update=update)


def reverse_keys(value):
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {key: reverse_keys(item) for key, item in reversed(list(value.items()))}
    if isinstance(value, list):
        return [reverse_keys(item) for item in value]
    return value


def generate(directory: Path, *, cwd: Path, seed: str, extra_env: dict[str, str] | None = None) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed, **(extra_env or {})}
    result = run_orlgen("generate", directory, cwd=cwd, env=env, timeout=120)
    assert result.returncode == 0, result.stderr


def snapshots_only(destination: Path) -> Path:
    destination.mkdir(parents=True)
    for name in NAMES:
        shutil.copy(GENERATED / f"{name}.snapshot.json", destination)
        shutil.copy(GENERATED / f"{name}.tasks.jsonl", destination)
    return destination


def assert_same_as_checked_in(directory: Path) -> None:
    for name in NAMES:
        assert (directory / f"{name}.py").read_bytes() == (GENERATED / f"{name}.py").read_bytes(), name


# --------------------------------------------------------------------------------------------
# (a) input order
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_render_ignores_the_order_of_tools_and_tasks(original: Snapshot, seed: int):
    mixed = reorder(original, seed)
    assert [t.name for t in mixed.tools] != [t.name for t in original.tools]
    assert mixed.to_json() == original.to_json()
    assert render.render_module(mixed) == render.render_module(original)


@pytest.mark.slow
def test_generate_from_a_non_canonical_snapshot_file(tmp_path: Path):
    """A snapshot file with its lists reordered and its JSON not canonical (one line, unsorted
    keys) but the right hash loads, and generates the checked-in bytes."""
    for name in NAMES:
        mixed = reorder(snapshot.load(GENERATED / f"{name}.snapshot.json"), seed=7)
        data = mixed.interface()
        text = json.dumps({key: data[key] for key in reversed(list(data))})
        assert text != mixed.to_json()
        (tmp_path / f"{name}.snapshot.json").write_text(text, encoding="utf-8")
        shutil.copy(GENERATED / f"{name}.tasks.jsonl", tmp_path)
    generate(tmp_path, cwd=tmp_path, seed="0")
    assert_same_as_checked_in(tmp_path)


def test_render_ignores_the_order_of_splits():
    original = snapshot.load(GENERATED / "helpdesk.snapshot.json")
    mixed = reorder(original, seed=0, splits=True)
    assert [s.name for s in mixed.splits] != [s.name for s in original.splits]
    assert mixed.to_json() == original.to_json()
    assert render.render_module(mixed) == render.render_module(original)


def test_render_ignores_the_key_order_of_tool_schemas():
    original = snapshot.load(GENERATED / "helpdesk.snapshot.json")
    mixed = original.model_copy(
        update={"tools": [t.model_copy(update={"input_schema": reverse_keys(t.input_schema)}) for t in original.tools]}
    )
    assert mixed.to_json() == original.to_json()
    assert render.render_module(mixed) == render.render_module(original)


# --------------------------------------------------------------------------------------------
# (b) hash seed and working directory, (c) the user's formatter configuration
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed, where",
    [
        pytest.param("0", "inside", id="seed-0-cwd-output-dir"),
        pytest.param("1", "root", id="seed-1-cwd-root"),
        pytest.param("12345", "nested", id="seed-12345-cwd-elsewhere"),
    ],
)
def test_generate_is_independent_of_hash_seed_and_working_directory(tmp_path: Path, seed: str, where: str):
    out = snapshots_only(tmp_path / "gen")
    cwd = {"inside": out, "root": Path("/"), "nested": tmp_path / "a" / "b"}[where]
    cwd.mkdir(parents=True, exist_ok=True)
    generate(out, cwd=cwd, seed=seed)
    assert_same_as_checked_in(out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{n}{suffix}" for n in NAMES for suffix in (".py", ".snapshot.json", ".tasks.jsonl")] + ["orlgen.lock"]
    )


# Renders echo's module for the stand-in trainer (tests/support/stand_in_trainer.py) in this
# interpreter, from the snapshot as stored or reordered, and prints it.
_STAND_IN_RENDER = """
import sys
from pathlib import Path

import pytest
from orlgen.render.jobs import render_module
from orlgen.snapshot.model import load
from tests.support.stand_in_trainer import install
from tests.test_determinism import reorder

install(pytest.MonkeyPatch(), "verifiers", Path(sys.argv[1]))
original = load(Path("generated/echo.snapshot.json"), rows=False)
snapshot = original if sys.argv[2] == "stored" else reorder(original, seed=int(sys.argv[2]))
sys.stdout.write(render_module(snapshot, None, "verifiers"))
"""


@pytest.mark.slow
def test_every_trainer_renders_the_same_bytes_whatever_the_hash_seed_and_input_order(tmp_path: Path):
    """The neutral plan a trainer reads is canonical: a second trainer's module (the stand-in's
    template reads names, hints, defaults and fingerprints) is the same bytes from a
    reordered snapshot under another hash seed."""
    outputs = []
    for seed, order in (("0", "stored"), ("1", "3"), ("12345", "7")):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _STAND_IN_RENDER, str(tmp_path / seed), order],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0].startswith("# Code generated by orlgen") and '"echo": {' in outputs[0]
    assert outputs[1:] == [outputs[0], outputs[0]]


@pytest.mark.slow
def test_user_formatter_configuration_is_ignored(tmp_path: Path):
    project = tmp_path / "project"
    out = snapshots_only(project / "generated")
    (project / "pyproject.toml").write_text(USER_FORMATTER_CONFIG)
    (project / ".isort.cfg").write_text("[settings]\nline_length = 40\nforce_single_line = true\n")
    (project / "setup.cfg").write_text("[isort]\nline_length = 40\n[flake8]\nmax-line-length = 40\n")
    generate(Path("generated"), cwd=project, seed="0")
    assert_same_as_checked_in(out)


# --------------------------------------------------------------------------------------------
# (d) the header names the tool versions and the snapshot, nothing about orlgen's own code
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_change_to_orlgen_that_keeps_the_output_keeps_the_bytes(tmp_path: Path):
    """A comment added to a generator module changes no generated byte: the header records no
    digest of orlgen's source, so a refactor does not make every checked-in module stale."""
    package = tmp_path / "src" / "orlgen"
    shutil.copytree(REPO / "orlgen", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "templates", tmp_path / "src" / "templates")
    for module in ("plan/planner.py", "render/jobs.py", "trainers/trl/layout.py"):
        with (package / module).open("a") as handle:
            handle.write("\n# A refactor's comment: no effect on generated code.\n")
    out = snapshots_only(tmp_path / "gen")
    generate(out, cwd=tmp_path, seed="0", extra_env={"PYTHONPATH": str(tmp_path / "src")})
    assert_same_as_checked_in(out)
