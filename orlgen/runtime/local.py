"""Serve `openreward` Environment classes on a loopback port.

Three users: a generated adapter whose snapshot target is `module:EnvClass` and that was given
no URL (`local_url`: one child server per class and process, started on first use); a capture
of such a target (`serving`, in the capturing process); and the demo, the tests and the
benchmarks (`ServerProcess`, which can also kill and restart a server). The generator's
`orlgen.serve` re-exports all of this: the runtime must not import the generator.

An environment's output (the SDK server logs every failed request with a traceback, on stdout)
goes to a log file instead of the user's terminal.

We drive uvicorn directly instead of `Server.run()`: that one binds 0.0.0.0 and starts an update
check that talks to the network, and neither belongs on a training machine or in a capture.
"""

from __future__ import annotations

import importlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any, NoReturn

from .errors import OrlgenRuntimeError

# Set by ServerProcess for its child: serve until stdin closes, i.e. until the parent is gone,
# however it ended (a SIGKILLed trainer leaves no server behind).
_UNTIL_EOF = "ORLGEN_SERVE_UNTIL_EOF"


class ServeError(OrlgenRuntimeError):
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
    if not hasattr(module, attr):
        raise ServeError(f"module {module_name!r} has no class {attr!r}")
    env_cls = getattr(module, attr)
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
def _uvicorn(app: Any, port: int, startup_timeout: float, configure_logging: bool) -> Iterator[str]:
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

    The child's output goes to `log` (default: nowhere). It serves until `stop()` or until this
    process is gone: it watches its stdin, a pipe only this process holds. `stop()` kills it the
    hard way (as a crash would) and `start()` brings it back on the same port, so fault tests
    can take a server away mid-episode.
    """

    def __init__(
        self,
        spec: str,
        port: int = 0,
        startup_timeout: float = 60.0,
        entry: str = "orlgen.serve",
        log: Path | None = None,
    ) -> None:
        self.spec = spec
        self.port = port
        self.entry = entry  # the module run with `python -m ENTRY SPEC PORT`
        self.startup_timeout = startup_timeout
        self.log = log
        self._process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self) -> ServerProcess:
        env = {
            **os.environ,
            "OPENREWARD_LOG_LEVEL": "WARNING",
            "PYTHONPATH": os.pathsep.join(sys.path),
            _UNTIL_EOF: "1",
        }
        with open(self.log, "ab") if self.log else open(os.devnull, "wb") as output:
            self._process = subprocess.Popen(
                [sys.executable, "-m", self.entry, self.spec, str(self.port)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=output,
                text=True,
                env=env,
            )
        deadline = time.monotonic() + self.startup_timeout
        # The URL, once the server accepts connections; lines the env's import printed come first.
        line = ""
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("http://") or time.monotonic() > deadline:
                break
        if not line.startswith("http://"):
            self.stop()
            raise ServeError(f"the server for {self.spec} did not start{self._last_words()}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        return self

    def _last_words(self) -> str:
        """The log's last line (the exception that stopped the child) and where the log is."""
        if self.log is None:
            return ""
        lines = [line.strip() for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        return (f": {lines[-1][:300]}" if lines else "") + f" (log: {self.log})"

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            for pipe in (self._process.stdin, self._process.stdout):
                if pipe is not None:
                    pipe.close()
            self._process = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_servers: dict[tuple[int, str], ServerProcess] = {}
_servers_lock = threading.Lock()


def local_url(spec: str) -> str:
    """The URL of this process's server for `spec`, started on first use and shared by every
    adapter of the class in the process (keyed by pid: a forked child starts its own).

    It stops when this process ends, however it ends (see ServerProcess); its output goes to
    `log_path(spec)`.
    """
    key = (os.getpid(), spec)
    with _servers_lock:
        server = _servers.get(key)
        if server is None or server._process is None or server._process.poll() is not None:
            server = _servers[key] = ServerProcess(spec, log=log_path(spec)).start()
    return server.url


def log_path(spec: str) -> Path:
    """Where the output of this process's local server for `spec` goes (kept after the run)."""
    name = re.sub(r"\W+", "_", spec.rpartition(":")[2]).lower() or "env"
    return Path(tempfile.gettempdir()) / f"orlgen-{name}-{os.getpid()}.log"


_USAGE = """usage: python -m orlgen.serve module:EnvClass [PORT]

Serve the openreward Environment class EnvClass of `module` on 127.0.0.1 until interrupted,
and print its URL. PORT defaults to a free port."""


def main(argv: list[str] | None = None) -> None:
    """`python -m orlgen.serve module:EnvClass [PORT]`: serve until interrupted. Bad usage, an
    env that cannot be imported and a port that cannot be bound are one line on stderr and exit
    2, as the `orlgen` command's errors are."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(_USAGE)
        return
    if not 1 <= len(args) <= 2 or args[0].startswith("-"):
        _exit_usage(_USAGE.splitlines()[0])
    port = _port(args[1]) if len(args) > 1 else 0
    try:
        env_cls = load_env_class(args[0])
    except ServeError as exc:
        _exit_usage(f"orlgen.serve: {exc}")  # one line, the last of the log
    with ExitStack() as stack:
        try:
            url = stack.enter_context(serving(env_cls, port=port))
        except OSError as exc:  # the port is taken, or not ours to bind
            _exit_usage(f"orlgen.serve: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
        _serve_until_done(url)


def _serve_until_done(url: str) -> None:
    print(url, flush=True)
    # From here on the server's stdout (its logs) joins stderr: the parent reads only the URL,
    # and logs left in an unread pipe would block the server once it fills.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    try:
        if os.environ.get(_UNTIL_EOF):
            sys.stdin.buffer.read()  # returns when the parent closes the pipe or is gone
        else:
            threading.Event().wait()
    except KeyboardInterrupt:
        pass


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        _exit_usage(f"orlgen.serve: {text[:40]!r} is not a port number (0-65535)")
    return int(text)


def _exit_usage(line: str) -> NoReturn:
    print(line, file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
