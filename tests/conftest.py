"""Shared fixtures: real ORS servers on loopback ports, and loading generated modules."""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from types import ModuleType

os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")  # before openreward creates its loggers
# A suite started as `nohup make test &` (or `&` in a shell without job control) inherits an
# ignored SIGINT, and so would every `orlgen` child it starts: the Ctrl-C tests' SIGINT would be
# lost (measured: all four failed so). With Python's own handler here, children start with the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


from tests.support.modules import generated, load_module  # noqa: E402
from tests.support.servers.both import KINDS, BothServer, SharedServers  # noqa: E402

SDK = "openreward-sdk"

# The files that take longest (`pytest --durations=0` on 2 cores: 85-200 s each) are handed to
# `make test`'s workers first, so the two finish together instead of one running a two-minute
# file alone at the end. Only the order of files changes; the others keep theirs, after these.
LONGEST_FIRST = (
    "test_async_trainer.py",
    "test_faults.py",
    "test_two_servers.py",
    "test_ors_client.py",
    "test_verifiers.py",
    "test_runtime_install.py",
    "test_release.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: a file's own order kept


@pytest.fixture(scope="session")
def shared_servers():
    """`shared_servers.url(kind, spec)`: `spec` (an env written for the openreward SDK) served by
    the ORS implementation `kind`, started on first ask and kept for the session."""
    servers = SharedServers()
    yield servers
    servers.close()


@pytest.fixture(params=KINDS)
def ors_kind(request) -> str:
    """Each ORS server implementation in turn: `openreward-sdk` (the SDK's `Server`) and `ors-sdk`
    (ors-sdk's `ors.Server`, serving envs written for the SDK through `tests/support/envs/ors_port.py`).
    A test that takes it (or `serve`) runs once on each. Function-scoped, so pytest keeps the
    suite's order (a session-scoped parameter regroups every module's tests by value); the
    servers themselves are shared (`shared_servers`)."""
    return request.param


@pytest.fixture
def serve(shared_servers, ors_kind):
    """`serve("examples.echo:Echo")`: the URL of that env on this test's ORS implementation
    (`ors_kind`), shared with every other test that asks for it."""
    return functools.partial(shared_servers.url, ors_kind)


@pytest.fixture(scope="session")
def echo_url(shared_servers):
    return shared_servers.url(SDK, "examples.echo:Echo")


@pytest.fixture(scope="session")
def helpdesk_url(shared_servers):
    return shared_servers.url(SDK, "examples.helpdesk:Helpdesk")


@pytest.fixture(scope="session")
def echo_module() -> ModuleType:
    return load_module(REPO / "generated" / "echo.py")


@pytest.fixture(scope="session")
def helpdesk_module() -> ModuleType:
    return load_module(REPO / "generated" / "helpdesk.py")


@pytest.fixture(scope="session")
def recording_module(tmp_path_factory) -> ModuleType:
    """`tests.support.envs.recording:Recording`, captured and generated into a temp dir."""
    from orlgen.capture.live import capture
    from orlgen.render.jobs import generate
    from orlgen.review.files import write_files

    out = tmp_path_factory.mktemp("recording")
    snapshot = capture("tests.support.envs.recording:Recording")
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    return load_module(out / "recording.py")


@pytest.fixture(scope="session", params=KINDS)
def ors_server(request) -> BothServer:
    """The both-env (`tests/support/envs/both.py`) served by each ORS implementation in turn (ids
    as `ors_kind`'s), in a child process on a free loopback port. `.url`, `.kind`; `.process` to kill it."""
    with BothServer(request.param) as server:
        yield server


@pytest.fixture(scope="session")
def both_module(tmp_path_factory) -> ModuleType:
    """The both-env's generated module, captured from its openreward twin (capture uses the SDK);
    `BothEnv(base_url=...)` reaches either server."""
    return generated("tests.support.envs.both:Both", tmp_path_factory.mktemp("both"))


@pytest.fixture(scope="session")
def recording_url(shared_servers):
    return shared_servers.url(SDK, "tests.support.envs.recording:Recording")


@pytest.fixture
def quiet_and_single_threaded(monkeypatch):
    """No experimental-feature warning, no progress bars; and one torch thread: a model this small
    runs faster on one, several times faster when other work shares the CPU. For the TRL tests
    (`pytestmark = pytest.mark.usefixtures("quiet_and_single_threaded")`)."""
    import torch
    from transformers.utils import logging as hf_logging

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    threads, bars = torch.get_num_threads(), hf_logging.is_progress_bar_enabled()
    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    yield
    torch.set_num_threads(threads)
    if bars:
        hf_logging.enable_progress_bar()


@pytest.fixture(scope="session")
def tiny_model_path() -> str:
    """The checkpoint directory of the tiny Qwen3 (`tests/support/models/tiny_qwen3.py`)."""
    from tests.support.models.tiny_qwen3 import tiny_qwen3_dir

    return str(tiny_qwen3_dir())
