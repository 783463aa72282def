"""Generated modules for tests: the checked-in ones loaded from their files, and test envs
captured and generated on the spot."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

from orlgen.capture.live import capture
from orlgen.render import header
from orlgen.render.jobs import generate
from orlgen.review.files import write_files

REPO = Path(__file__).resolve().parents[2]

_counter = itertools.count()


def trl_modules() -> list[Path]:
    """The checked-in modules TRL trains with (their header names trainer `trl`, or none, as
    before trainers), mixtures included: another trainer's module imports its framework, which
    this venv does not hold."""
    found = ((path, header.parse(path.read_bytes())) for path in sorted((REPO / "generated").glob("*.py")))
    return [path for path, read in found if read is not None and read.trainer in (None, "trl")]


def load_module(path: Path) -> ModuleType:
    """Import a generated module from its file, under a fresh name each time."""
    name = f"orlgen_test_module_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def generated(spec: str, out, trainers: tuple[str, ...] = ("trl",)) -> object:
    """Capture `spec`, generate its modules for `trainers` into `out` and import the first
    trainer's by name (so it pickles)."""
    snapshot = capture(spec)
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)], trainers={snapshot.name: trainers}))
    sys.path.insert(0, str(out))
    try:
        suffix = "" if trainers[0] == "trl" else f"_{trainers[0]}"
        return importlib.import_module(path.name.removesuffix(".snapshot.json") + suffix)
    finally:
        sys.path.remove(str(out))
