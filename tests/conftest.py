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

from examples.echo import Echo  # noqa: E402
from examples.helpdesk import Helpdesk  # noqa: E402
from orlgen.serve import serving  # noqa: E402

_counter = itertools.count()


@pytest.fixture(scope="session")
def echo_url():
    with serving(Echo) as url:
        yield url


@pytest.fixture(scope="session")
def helpdesk_url():
    with serving(Helpdesk) as url:
        yield url


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
