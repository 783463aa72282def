"""`python -m tests.support.servers.both module:EnvClass PORT`: serve an env class with the server of
the SDK it was written for: `ors.Server` for an `ors.Environment` (ors-sdk 0.1.0), the openreward
SDK's `Server` otherwise. `ors:module:EnvClass` serves an env written for the openreward SDK with
`ors.Server`, its module imported on ors-sdk's names (`tests/support/envs/ors_port.py`). Both on 127.0.0.1 (ors' own `run()` binds 0.0.0.0), both with uvicorn
as `orlgen.serve` drives it, and with the same child-process contract as `orlgen.serve` (so
`ServerProcess(spec, entry=ENTRY)` starts, kills and restarts either): the URL on stdout once
it accepts connections, then serve until stdin closes.

FAULT INJECTION, when asked: `ORLGEN_TEST_MIDDLEWARE=module:Class[,module:Class]` wraps the app in
those ASGI middlewares (outermost last), the same on either server; the env and the servers are
untouched.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orlgen.serve import ServerProcess

ENTRY = "tests.support.servers.both"
MIDDLEWARE = "ORLGEN_TEST_MIDDLEWARE"
KINDS = ("openreward-sdk", "ors-sdk")
SPECS = {"openreward-sdk": "tests.support.envs.both:Both", "ors-sdk": "tests.support.envs.both:BothOrs"}
PORTED = "ors:"  # the prefix of a spec served by ors-sdk's server through `ors_port`


def target(kind: str, spec: str) -> str:
    """The spec a server entry serves `spec` (an env written for the openreward SDK) by: as it is
    with the SDK's server, through `ors_port` with ors-sdk's."""
    return spec if kind == "openreward-sdk" else PORTED + spec


def server_process(kind: str, spec: str) -> ServerProcess:
    """`spec` (an env written for the openreward SDK) served by the server of `kind`, not started."""
    from orlgen.serve import ServerProcess

    return ServerProcess(target(kind, spec), entry="orlgen.serve" if kind == "openreward-sdk" else ENTRY)


class BothServer:
    """A child server of `kind` (`openreward-sdk` or `ors-sdk`) serving the both-env, wearing the
    named middlewares; `process` kills (`stop()`), restarts (`start()`) and signals it."""

    def __init__(self, kind: str, middleware: tuple[str, ...] = (), spec: str | None = None) -> None:
        from orlgen.serve import ServerProcess

        self.kind, self.middleware = kind, middleware
        self.process = ServerProcess(spec or SPECS[kind], entry=ENTRY)

    @property
    def url(self) -> str:
        return self.process.url

    def start(self) -> BothServer:
        saved = os.environ.get(MIDDLEWARE)
        os.environ[MIDDLEWARE] = ",".join(self.middleware)
        try:
            self.process.start()
        finally:
            if saved is None:
                os.environ.pop(MIDDLEWARE)
            else:
                os.environ[MIDDLEWARE] = saved
        return self

    def __enter__(self) -> BothServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.process.stop()


class SharedServers:
    """Servers a whole test session shares: `url(kind, spec)` starts `spec` on the server of `kind`
    on first ask (in this process's environment at that moment) and keeps it until `close()`."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, str], ServerProcess] = {}

    def url(self, kind: str, spec: str) -> str:
        if (kind, spec) not in self._running:
            self._running[kind, spec] = server_process(kind, spec).start()
        return self._running[kind, spec].url

    def close(self) -> None:
        for process in self._running.values():
            process.stop()
        self._running.clear()


def _load(spec: str) -> object:
    if spec.startswith(PORTED):
        from tests.support.envs.ors_port import import_ported

        module, _, attr = spec.removeprefix(PORTED).partition(":")
        return getattr(import_ported(module), attr)
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def app_for(spec: str) -> object:
    """The ASGI app serving `spec`, by the server of the SDK its class subclasses."""
    env_cls = _load(spec)
    if any(base.__module__.startswith("ors.") for base in env_cls.__mro__):
        from ors import Server
    else:
        os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
        from openreward.environments import Server
    app = Server([env_cls]).app
    for name in filter(None, os.environ.get(MIDDLEWARE, "").split(",")):
        app.add_middleware(_load(name))
    return app


def serve(app: object, port: int) -> None:
    """Serve `app` on 127.0.0.1:`port`, print the URL once started, return when stdin closes."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=60))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise SystemExit("the server did not start")
        time.sleep(0.01)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the parent reads the URL line only
    sys.stdin.buffer.read()


if __name__ == "__main__":
    if "" not in sys.path:
        sys.path.insert(0, "")
    serve(app_for(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
