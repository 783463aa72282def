"""Shared fixtures: real ORS servers on loopback ports, and loading generated modules."""

from __future__ import annotations

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

from tests.support.modules import load_module  # noqa: E402


@pytest.fixture(scope="session")
def echo_url():
    with ServerProcess("examples.echo:Echo") as server:
        yield server.url


@pytest.fixture(scope="session")
def helpdesk_url():
    with ServerProcess("examples.helpdesk:Helpdesk") as server:
        yield server.url


@pytest.fixture(scope="session")
def echo_module() -> ModuleType:
    return load_module(REPO / "generated" / "echo.py")


@pytest.fixture(scope="session")
def helpdesk_module() -> ModuleType:
    return load_module(REPO / "generated" / "helpdesk.py")


@pytest.fixture(scope="session")
def recording_module(tmp_path_factory) -> ModuleType:
    """`tests.support.envs.recording:Recording`, captured and generated into a temp dir."""
    from orlgen.capture import capture
    from orlgen.files import write_files
    from orlgen.render import generate

    out = tmp_path_factory.mktemp("recording")
    snapshot = capture("tests.support.envs.recording:Recording")
    path = out / snapshot.file_name
    path.write_text(snapshot.to_json())
    write_files(generate([(path, snapshot)]))
    return load_module(out / "recording.py")


@pytest.fixture(scope="session")
def recording_url():
    with ServerProcess("tests.support.envs.recording:Recording") as server:
        yield server.url
