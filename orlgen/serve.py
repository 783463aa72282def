"""Serve `openreward` Environment classes on a loopback port: in this process (`serving`, for
capturing a `module:EnvClass` target) or in a child process (`ServerProcess`, for the demo and
the tests, which also need to kill and restart servers).

A captured environment's output (the SDK server logs every failed request with a traceback, on
stdout) goes to a log file instead of the user's terminal: `serving(..., log=path)`.

We drive uvicorn directly instead of `Server.run()`: that one binds 0.0.0.0 and starts an update
check that talks to the network, and neither belongs in an offline capture.
"""

from __future__ import annotations

import importlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from .errors import OrlgenError


class ServeError(OrlgenError, RuntimeError):
    """The environment could not be imported or served."""


def load_env_class(spec: str) -> type:
    """Import `module:EnvClass` (the current directory is importable, as with uvicorn)."""
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")  # before the module imports openreward
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ServeError(f"{spec!r} is not of the form module:EnvClass")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a module that fails on import, however it fails
        raise ServeError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}".splitlines()[0]) from exc
    env_cls = getattr(module, attr, None)
    from openreward.environments import Environment

    if not (isinstance(env_cls, type) and issubclass(env_cls, Environment)):
        raise ServeError(f"{spec!r} is not an openreward.environments.Environment subclass")
    return env_cls


@contextmanager
def serving(*env_classes: type, port: int = 0, startup_timeout: float = 30.0, log: Path | None = None) -> Iterator[str]:
    """Serve the classes on 127.0.0.1 (a free port unless given) and yield the base URL.

    With `log`, the server's output goes to that file while it runs (see `_output_to`).

    One at a time per process: sse-starlette keeps a process-global event bound to the event
    loop of the first server that streamed. We reset it so that sequential servers work; use
    `ServerProcess` to run several at once.
    """
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
    from openreward.environments import Server
    from sse_starlette.sse import AppStatus

    AppStatus.should_exit_event = None

    with _output_to(log) if log else nullcontext():
        app = Server(list(env_classes)).app
        with _uvicorn(app, port, startup_timeout, configure_logging=log is None) as url:
            yield url


@contextmanager
def _uvicorn(app: object, port: int, startup_timeout: float, configure_logging: bool) -> Iterator[str]:
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that name it, and without
    # it every request on a reused connection waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=60,
        log_config=LOGGING_CONFIG if configure_logging else None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise ServeError("the ORS server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout, and uvicorn's log records, to `path` for a while.

    The SDK server writes its logs (tracebacks included) with structlog to the stdout it found
    at import, so only a file-descriptor-level redirect reaches them; anything else this
    process prints to stdout meanwhile goes to the file too. stderr stays the terminal's, for
    orlgen's own progress and errors; uvicorn logs there, so its records are sent to the file.
    """
    import logging

    if sys.stdout is not None:  # None under pythonw and the like
        sys.stdout.flush()
    saved = os.dup(1)
    handler = logging.FileHandler(path, encoding="utf-8")
    loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    before = [(logger.handlers[:], logger.propagate) for logger in loggers]
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 1)
    for logger in loggers:
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield
    finally:
        if sys.stdout is not None:
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        for logger, (handlers, propagate) in zip(loggers, before, strict=False):
            logger.handlers, logger.propagate = handlers, propagate
        handler.close()


class ServerProcess:
    """`module:EnvClass` served by a child Python process on a loopback port.

    `stop()` kills it the hard way (as a crash would) and `start()` brings it back on the same
    port, so fault tests can take a server away mid-episode.
    """

    def __init__(self, spec: str, port: int = 0, startup_timeout: float = 60.0, entry: str = "orlgen.serve") -> None:
        self.spec = spec
        self.port = port
        self.entry = entry  # the module run with `python -m ENTRY SPEC PORT`
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        env = {**os.environ, "OPENREWARD_LOG_LEVEL": "WARNING", "PYTHONPATH": os.pathsep.join(sys.path)}
        self._process = subprocess.Popen(
            [sys.executable, "-m", self.entry, self.spec, str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + self.startup_timeout
        # The URL, once the server accepts connections; lines the env's import printed come first.
        line = ""
        for line in self._process.stdout:
            if line.startswith("http://") or time.monotonic() > deadline:
                break
        if not line.startswith("http://"):
            self.stop()
            raise ServeError(f"the server for {self.spec} did not start")
        self.port = int(line.strip().rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process.stdout.close()
            self._process = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """`python -m orlgen.serve module:EnvClass [PORT]`: serve until interrupted."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        raise SystemExit("usage: python -m orlgen.serve module:EnvClass [PORT]")
    env_cls = load_env_class(args[0])
    with serving(env_cls, port=int(args[1]) if len(args) > 1 else 0) as url:
        print(url, flush=True)
        # From here on the server's stdout (its logs) joins stderr: the parent reads only the URL,
        # and logs left in an unread pipe would block the server once it fills.
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
