"""Serve `openreward` Environment classes on a loopback port.

Three users: a generated adapter whose snapshot target is `module:EnvClass` and that was given
no URL (`local_url`: one child server per class and process, started on first use); a capture
of such a target (`serving`, in the capturing process); and the demo, the tests and the
benchmarks (`ServerProcess`, which can also kill and restart a server). The generator's
`orlgen.serve` re-exports all of this: the runtime must not import the generator.

An environment's output (the SDK server logs every failed request with a traceback, on stdout)
goes to a log file instead of the user's terminal. A traceback may quote a secret the server was
given, so every log is private and masked: created by `open_log` (mode 0600, a random name,
`O_EXCL|O_NOFOLLOW`, so nothing planted in the temporary directory is followed or reused), and
written by `_pump`, which masks secrets line by line (a long line piece by piece, a secret across
two pieces included) before anything reaches the disk. A local
server's log is removed when its process exits cleanly, and kept and named when the server or
the process failed (capture does the same with its own).

We drive uvicorn directly instead of `Server.run()`: that one binds 0.0.0.0 and starts an update
check that talks to the network, and neither belongs on a training machine or in a capture.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import functools
import importlib
import logging
import os
import queue
import re
import secrets as random_names
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import IO, Any, NoReturn

from .. import process
from ..errors import OrlgenRuntimeError, described, first_line
from ..redaction import CREDENTIAL_NAME, MASKED_LENGTH, redact

logger = logging.getLogger("orlgen")

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
        raise ServeError(f"cannot import {module_name!r}: {described(exc)}") from exc
    if not hasattr(module, attr):
        raise ServeError(f"module {module_name!r} has no class {attr!r}")
    env_cls = getattr(module, attr)
    from openreward.environments import Environment

    if not (isinstance(env_cls, type) and issubclass(env_cls, Environment)):
        raise ServeError(f"{spec!r} is not an openreward.environments.Environment subclass")
    return env_cls


@contextmanager
def serving(
    *env_classes: type,
    port: int = 0,
    startup_timeout: float = 30.0,
    log: Path | None = None,
    secrets: Iterable[str] = (),
) -> Iterator[str]:
    """Serve the classes on 127.0.0.1 (a free port unless given) and yield the base URL.

    With `log` (a file made by `open_log`), the server's output goes to that file while it runs,
    `secrets` and the environment's credentials masked (see `_output_to`).

    One at a time per process: sse-starlette keeps a process-global event bound to the event
    loop of the first server that streamed. We reset it so that sequential servers work; use
    `ServerProcess` to run several at once.
    """
    os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
    from openreward.environments import Server
    from sse_starlette.sse import AppStatus

    AppStatus.should_exit_event = None

    with _output_to(log, secrets) if log else nullcontext():
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
    thread = threading.Thread(target=_run, args=(server, sock), daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise ServeError("the ORS server did not start")
        time.sleep(0.01)
    stopping = 10.0
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    except BaseException:
        # Interrupted or failed: the env's requests still running are nobody's concern now
        # (uvicorn would wait for them, and an env's code may never return).
        server.force_exit, stopping = True, 1.0
        raise
    finally:
        server.should_exit = True
        thread.join(timeout=stopping)
        sock.close()


def _run(server: Any, sock: socket.socket) -> None:
    """`server.run()`, with the env's sync code (the SDK runs it with `asyncio.to_thread`) on
    `_AbandonableExecutor` threads."""

    async def serve() -> None:
        asyncio.get_running_loop().set_default_executor(_AbandonableExecutor())
        await server.serve(sockets=[sock])

    asyncio.run(serve())


class _AbandonableExecutor(ThreadPoolExecutor):
    """A pool of daemon threads that nobody joins: the interpreter joins a ThreadPoolExecutor's
    threads at exit, and an env's `get_prompt` that never returned held a Ctrl-C'd capture for
    its whole 600 s (measured). Env code cannot be stopped from outside, so it is left behind.

    A ThreadPoolExecutor only in type (asyncio requires one as a default executor); none of the
    base class's machinery is used. Like it, it starts a thread only when no idle one is there,
    up to the same default size, so the env sees the concurrency it would under `Server.run()`
    (a thread per call instead cost 1.4 ms a call against 0.2 ms, measured under load).
    """

    def __init__(self) -> None:
        super().__init__()
        self._size = min(32, (os.cpu_count() or 1) + 4)
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._started = 0
        self._growing = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        self._calls.put((future, functools.partial(fn, *args, **kwargs)))
        if not self._idle.acquire(blocking=False):
            with self._growing:
                if self._started < self._size:
                    self._started += 1
                    threading.Thread(target=self._work, name="orlgen-env", daemon=True).start()
        return future

    def _work(self) -> None:
        while (item := self._calls.get()) is not None:
            future, call = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call())
                except BaseException as exc:  # the env's, handed to the request that awaits it
                    future.set_exception(exc)
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Idle threads end; one still in the env's code ends when that returns, never waited for."""
        for _ in range(self._started):
            self._calls.put(None)


@contextmanager
def _output_to(path: Path, secrets: Iterable[str]) -> Iterator[None]:
    """Send this process's stdout, and uvicorn's log records, to `path` for a while, masked.

    The SDK server writes its logs (tracebacks included) with structlog, to the stdout it found
    at import: a file-descriptor-level redirect reaches them when that stdout is file descriptor
    1. structlog prints to the *current* `sys.stdout` when its file is the one it saw at import,
    so `sys.stdout` is pointed at the redirect too: where it is not file descriptor 1 (a
    notebook, click's test runner) the logs reach the file all the same. Anything else this
    process prints to stdout meanwhile goes to the file too. The redirect is a pipe that `_pump`
    drains into the file. stderr stays the terminal's, for orlgen's own progress and errors;
    uvicorn logs there, so its records are sent to the pipe as well.
    """
    if sys.stdout is not None:  # None under pythonw and the like
        sys.stdout.flush()
    read, write = os.pipe()
    pump = _start_pump(os.fdopen(read, "rb"), path, secrets)
    saved = os.dup(1)
    os.dup2(write, 1)
    stream = os.fdopen(write, "w", encoding="utf-8", buffering=1)
    stdout, sys.stdout = sys.stdout, stream
    handler = logging.StreamHandler(stream)
    loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    before = [(logger.handlers[:], logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.handlers = [handler]
        logger.propagate = False
    try:
        yield
    finally:
        stream.flush()
        sys.stdout = stdout
        os.dup2(saved, 1)
        os.close(saved)
        for logger, (handlers, propagate) in zip(loggers, before, strict=False):
            logger.handlers, logger.propagate = handlers, propagate
        handler.close()
        stream.close()  # the pipe's last writer: the pump reads to its end and stops
        pump.join()


def open_log(label: str) -> Path:
    """A new, empty log file only this user can read or write: mode 0600, a random name in the
    temporary directory, created with `O_EXCL|O_NOFOLLOW` (a file or link already there under
    that name is an error, never reused or followed)."""
    slug = re.sub(r"\W+", "_", label).strip("_").lower()[:40] or "env"
    path = Path(tempfile.gettempdir()) / f"orlgen-{slug}-{random_names.token_hex(8)}.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.close(fd)
    return path


def environment_secrets() -> list[str]:
    """The values of this process's environment variables whose names say they are credentials
    (`*_API_KEY`, `*_TOKEN`, ...): the secrets an adapter forwards by default come from there."""
    return [value for name, value in os.environ.items() if CREDENTIAL_NAME.search(name) and value]


def _start_pump(source: IO[bytes], path: Path, secrets: Iterable[str]) -> threading.Thread:
    """A daemon thread copying `source` to the log at `path`, line by line, secrets masked."""
    values = [*secrets, *environment_secrets()]
    thread = threading.Thread(target=_pump, args=(source, path, values), name="orlgen-log", daemon=True)
    thread.start()
    return thread


_LINE = 1 << 20  # a longer line is read, masked and written in pieces of about this size


def _pump(source: IO[bytes], path: Path, secrets: list[str]) -> None:
    """Copy `source` to the log, masked. A line is read in pieces of at most `_LINE` bytes (a
    server may write a line of any length); the end of a piece that could still be part of a
    secret is held back and masked with what follows, so no secret reaches the disk whole across
    two pieces, and a character split between pieces is decoded whole."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    masked = [value for value in secrets if len(value) >= MASKED_LENGTH]  # what `redact` masks
    pattern = re.compile("|".join(re.escape(value) for value in sorted(masked, key=len, reverse=True)) or "(?!)")
    longest = max(map(len, masked), default=1)
    held = ""
    with source, open(fd, "wb") as log:
        for piece in iter(lambda: source.readline(_LINE), b""):
            text = held + decoder.decode(piece)
            cut = len(text) if text.endswith("\n") else _safe_cut(text, pattern, longest)
            held = text[cut:]
            log.write(redact(text[:cut], secrets).encode())
            log.flush()
        log.write(redact(held + decoder.decode(b"", final=True), secrets).encode())


def _safe_cut(text: str, pattern: re.Pattern[str], longest: int) -> int:
    """Where `text`, a piece of a line, may be cut for masking: before its last `longest - 1`
    characters (where a secret may begin that ends in the next piece), or before the secret
    found across that point. At most two secrets' length is held back."""
    cut = max(0, len(text) - longest + 1)
    for found in pattern.finditer(text, max(0, cut - longest + 1)):
        if found.start() < cut < found.end():
            return found.start()
    return cut


class ServerProcess:
    """`module:EnvClass` served by a child Python process on a loopback port.

    The child's output goes to `log` (a file made by `open_log`; default: nowhere), masked. It serves until `stop()` or until this
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
        self._pump: threading.Thread | None = None

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
        read, write = os.pipe() if self.log else (-1, subprocess.DEVNULL)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", self.entry, self.spec, str(self.port)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=write,
                text=True,
                env=env,
            )
        except BaseException:
            if self.log:
                os.close(read)
            raise
        finally:
            if self.log:
                os.close(write)  # the child holds its end: the pump stops when the child is gone
        if self.log:
            self._pump = _start_pump(os.fdopen(read, "rb"), self.log, ())
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
            if self._pump is not None:
                self._pump.join(timeout=10)  # the log holds all the child wrote
                self._pump = None
            for pipe in (self._process.stdin, self._process.stdout):
                if pipe is not None:
                    pipe.close()
            self._process = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _forget_servers(servers: dict[str, ServerProcess]) -> None:
    """In a forked child: close its copies of the servers' stdin pipes, then forget the servers
    (`process.forget`). A server's stdin reaches EOF only when every copy of the pipe is closed,
    so a copy left open would keep the server alive after its parent is killed."""
    for server in servers.values():
        if server._process is not None and server._process.stdin is not None:
            server._process.stdin.close()
    process.forget(servers)


_servers: dict[str, ServerProcess] = process.per_process({}, _forget_servers)  # spec → this process's server
_servers_lock = process.lock()
_exit_hooks: set[int] = process.per_process(set())  # the processes whose `_at_exit` is registered


def local_url(spec: str) -> str:
    """The URL of this process's server for `spec`, started on first use and shared by every
    adapter of the class in the process (a forked child starts its own: `_servers` is per process).

    It stops when this process ends, however it ends (see ServerProcess); its output goes to
    `log_path(spec)` while it runs. A server that died is started again, its log kept and named.
    """
    with _servers_lock:
        server = _servers.get(spec)
        if server is None or server._process is None or server._process.poll() is not None:
            if server is not None:
                _keep(server, "exited while in use")
                del _servers[spec]
            if os.getpid() not in _exit_hooks:
                _exit_hooks.add(os.getpid())
                atexit.register(_at_exit, os.getpid())
            # Kept only once started: a server that never started has its log named in the error.
            server = _servers[spec] = ServerProcess(spec, log=open_log(spec.rpartition(":")[2])).start()
    return server.url


def log_path(spec: str) -> Path | None:
    """The log of this process's local server for `spec` (None before it started)."""
    server = _servers.get(spec)
    return server.log if server is not None else None


def _keep(server: ServerProcess, why: str) -> None:
    """Leave a failed server's log in place, and say where it is."""
    logger.warning("orlgen: the local server for %s %s; its log is kept: %s", server.spec, why, server.log)


def _at_exit(pid: int) -> None:
    """At this process's exit: the logs of servers that ran well are removed; the log of one
    that died, or of any server when the process itself is failing (an uncaught exception),
    is kept and named."""
    if os.getpid() != pid:  # a forked child exiting: the servers are its parent's
        return
    failing = getattr(sys, "last_value", None) is not None
    for server in list(_servers.values()):
        if server.log is None:
            continue
        alive = server._process is not None and server._process.poll() is None
        if alive and not failing:
            server.log.unlink(missing_ok=True)
        else:
            _keep(server, "was running when this process failed" if alive else "exited while in use")


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
        _exit_usage(first_line(_USAGE))
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
