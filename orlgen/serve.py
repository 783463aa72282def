"""Serve `openreward` Environment classes on a loopback port, in this process.

Used to capture a `module:EnvClass` target, by the demo and by the tests. We drive uvicorn
directly instead of `Server.run()`: that one binds 0.0.0.0 and starts an update check that
talks to the network, and neither belongs in an offline capture.
"""

from __future__ import annotations

import importlib
import socket
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator


class ServeError(RuntimeError):
    """The environment could not be imported or served."""


def load_env_class(spec: str) -> type:
    """Import `module:EnvClass` (the current directory is importable, as with uvicorn)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ServeError(f"{spec!r} is not of the form module:EnvClass")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ServeError(f"cannot import {module_name!r}: {exc}") from exc
    env_cls = getattr(module, attr, None)
    from openreward.environments import Environment

    if not (isinstance(env_cls, type) and issubclass(env_cls, Environment)):
        raise ServeError(f"{spec!r} is not an openreward.environments.Environment subclass")
    return env_cls


@contextmanager
def serving(*env_classes: type, port: int = 0, startup_timeout: float = 30.0) -> Iterator[str]:
    """Serve the classes on 127.0.0.1 (a free port unless given) and yield the base URL."""
    import uvicorn
    from openreward.environments import Server

    app = Server(list(env_classes)).app
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_keep_alive=60)
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


def main(argv: list[str] | None = None) -> None:
    """`python -m orlgen.serve module:EnvClass [PORT]`: serve until interrupted."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        raise SystemExit("usage: python -m orlgen.serve module:EnvClass [PORT]")
    env_cls = load_env_class(args[0])
    with serving(env_cls, port=int(args[1]) if len(args) > 1 else 0) as url:
        print(url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
