"""Shared fixtures: real ORS servers on loopback ports, and loading generated modules."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from pathlib import Path
from types import ModuleType

os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")  # before openreward creates its loggers

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from orlgen.serve import ServerProcess  # noqa: E402

_counter = itertools.count()


@pytest.fixture(scope="session")
def echo_url():
    with ServerProcess("examples.echo:Echo") as server:
        yield server.url


@pytest.fixture(scope="session")
def helpdesk_url():
    with ServerProcess("examples.helpdesk:Helpdesk") as server:
        yield server.url


def load_module(path: Path) -> ModuleType:
    """Import a generated module from its file, under a fresh name each time."""
    name = f"orlgen_test_module_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def echo_module() -> ModuleType:
    return load_module(REPO / "generated" / "echo.py")


@pytest.fixture(scope="session")
def helpdesk_module() -> ModuleType:
    return load_module(REPO / "generated" / "helpdesk.py")


@pytest.fixture(scope="session")
def recording_module(tmp_path_factory) -> ModuleType:
    """`tests.recording_env:Recording`, captured and generated into a temp dir."""
    from orlgen.capture import capture
    from orlgen.files import write_files
    from orlgen.render import generate

    out = tmp_path_factory.mktemp("recording")
    snapshot = capture("tests.recording_env:Recording")
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    return load_module(out / "recording.py")


@pytest.fixture(scope="session")
def recording_url():
    with ServerProcess("tests.recording_env:Recording") as server:
        yield server.url
