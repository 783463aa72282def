"""How orlgen reaches an environment: its own ORS client (`ors.Client`) on one event-loop thread
per process, every call bounded by a timeout.

Adapters are synchronous (TRL calls `reset` and tools from plain threads); the client is async so
that one thread serves every rollout of the process. Every call waits at most its timeout, and a
bound that expires cancels the request and leaves the loop free for the next rollout.

At exit (normal end, an exception, SIGTERM: see `install_sigterm`) the open sessions are deleted.

Replicas. A self-hosted env often runs as several servers of one deployment: `base_url=` a list
(or `ORLGEN_<NAME>_URL` with URLs separated by commas) makes a pool (`Connection.replicas`). A
pool has no address of its own: `admission` opens each session on one replica (its `replica`
`Connection`) and every later call of the session goes there (a session lives on the server that
made it); a call that names no session (the split's size, `/version`) goes to the first replica
whose breaker is not open. One URL is the plain `Connection` it always was.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import re
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from .. import process
from ..data.spec import Target
from ..errors import OrlgenRuntimeError
from ..ors.secrets import on_loopback, platform_key
from ..redaction import public_url
from . import breaker
from .admission import env_key

if TYPE_CHECKING:
    from ..ors import client as ors

T = TypeVar("T")


class ConfigError(OrlgenRuntimeError):
    """Generated code does not know where its environment is."""


class CallTimeout(OrlgenRuntimeError):
    """A call to the environment did not finish within its bound."""


@dataclass(frozen=True)
class Connection:
    """A resolved address: a URL of a single-host server, a catalog name on the platform, or a
    pool of replicas of one env (`replicas`, each a URL; `url` and `catalog` None)."""

    url: str | None
    catalog: str | None
    env: str
    api_key: str | None
    max_answer_bytes: int | None = None  # refuse larger server answers, streamed ones included (capture sets it)
    trusted: bool = True  # the caller's key and secrets may go here (`resolve` says when not)
    replicas: tuple[str, ...] = ()  # a pool's URLs, in the order given (empty: not a pool)

    @classmethod
    def resolve(
        cls, target: Target, env_var: str, base_url: str | Sequence[str] | None, api_key: str | None
    ) -> Connection:
        """Explicit `base_url` first, then the `env_var` environment variable, then the snapshot's
        target (a `module:EnvClass` target is served by this process, on first use). Several
        URLs (a list, or text with commas) make a pool of replicas; one URL, a plain address.

        The caller's `api_key` goes where the caller named for this run (`base_url=`, `env_var`),
        to the platform, and to a server on loopback. A snapshot's URL target elsewhere is not
        trusted with it: the snapshot is repository data, and a pull request that reseals its
        target to another host (`url http://10.99.0.1:8000`) must not collect the key a training
        script passes (the adapter withholds the secrets too: `secrets.for_unnamed_target`)."""
        urls = _urls(base_url) or _urls(os.environ.get(env_var))
        if len(urls) > 1:
            return cls(url=None, catalog=None, env=target.env, api_key=api_key, replicas=urls)
        if urls:
            return cls(url=urls[0], catalog=None, env=target.env, api_key=api_key)
        if target.kind == "url":
            trusted = on_loopback(target.value)
            key = api_key if trusted else None
            return cls(url=target.value, catalog=None, env=target.env, api_key=key, trusted=trusted)
        if target.kind == "catalog":
            return cls(url=None, catalog=target.value, env=target.env, api_key=platform_key(api_key))
        return cls(url=_serve_locally(target, env_var), catalog=None, env=target.env, api_key=api_key)

    def __repr__(self) -> str:  # never show the API key, nor credentials in the URL
        if self.replicas:
            return f"Connection({[public_url(url, mask='***') for url in self.replicas]!r}, env={self.env!r})"
        where = public_url(self.url, mask="***") if self.url else self.catalog
        return f"Connection({where!r}, env={self.env!r})"

    @property
    def address(self) -> str:
        """Where this reaches, for a log line: the URL without credentials, the catalog name, or
        a pool's replicas."""
        if self.replicas:
            return "replicas " + ", ".join(public_url(url) for url in self.replicas)
        return public_url(self.url) if self.url else f"catalog {self.catalog}"

    def replica(self, url: str) -> Connection:
        """The plain `Connection` of one replica of this pool: its own client, breaker and budget."""
        return replace(self, url=url, replicas=())

    def reachable(self) -> Connection:
        """Where a call that names no session goes: this address, or a pool's first replica whose
        breaker is not open (the first replica when every one is: the call then fails as a
        single server's would)."""
        if not self.replicas:
            return self
        for replica in map(self.replica, self.replicas):
            if breaker.for_env(env_key(replica)).refusing() is None:
                return replica
        return self.replica(self.replicas[0])

    def run(self, call: Callable[[ors.Client], Awaitable[T]], timeout: float | None) -> T:
        """`await call(client)` on the runtime's loop, waiting at most `timeout` seconds. A
        session's own calls ignore `client`: they go to the server the session was opened on."""
        where = self.reachable()

        async def with_client() -> T:
            return await call(_client(where))

        install_sigterm()
        return _sdk_loop().run(with_client(), timeout)

    def run_nowait(self, call: Callable[[ors.Client], Awaitable[Any]]) -> None:
        """Start `call(client)` on the runtime's loop without waiting (for finalizers)."""
        where = self.reachable()

        async def with_client() -> None:
            try:
                await call(_client(where))
            except Exception:  # best effort; nobody is waiting
                pass

        _sdk_loop().submit(with_client())

    def watch(self, call: Callable[[ors.Client], Awaitable[None]]) -> None:
        """Run `call(client)` on the runtime's loop in the background for as long as it runs: a
        watch, cancelled at exit (which never waits for it), unlike `run_nowait`'s work."""

        where = self.reachable()

        async def with_client() -> None:
            await call(_client(where))

        _sdk_loop().watch(with_client())


# A comma that starts another URL (`scheme://` follows it): a comma inside one URL stays there.
_NEXT_URL = re.compile(r",\s*(?=[a-zA-Z][a-zA-Z0-9+.-]{0,31}://)")


def _urls(given: str | Sequence[str] | None) -> tuple[str, ...]:
    """The URLs `base_url=` or the variable names: one, a list, or text with a comma before each
    next URL (blanks and trailing slashes dropped, order kept, a repeated URL kept once). One
    URL is taken as it always was: only its trailing slashes go."""
    if not given:
        return ()
    parts = _NEXT_URL.split(given) if isinstance(given, str) else list(given)
    if len(parts) == 1:
        return (parts[0].rstrip("/"),) if parts[0] else ()
    urls = (part.strip().strip(",").strip().rstrip("/") for part in parts if part)
    return tuple(dict.fromkeys(url for url in urls if url))


def _serve_locally(target: Target, env_var: str) -> str:
    """A `module:EnvClass` target has no address: this process serves the class itself (see
    `orlgen.runtime.session.local`), unless it cannot be imported here."""
    from .local import ServeError, local_url

    try:
        return local_url(target.value)
    except ServeError as exc:
        raise ConfigError(
            f"cannot serve {target.value!r} in this process ({exc}): make it importable here, "
            f"or serve it yourself and pass base_url= or set {env_var}"
        ) from exc


def run_on_loop(coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
    """`await coro` on the runtime's loop, waiting at most `timeout` seconds: for the few requests
    orlgen makes without a client, under the same bounds."""
    return _sdk_loop().run(coro, timeout)


_CLEANUP_SECONDS = 3.0  # how long an interrupted request may take to close what it opened


class _Loop:
    """An event loop on a daemon thread, owned by one process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="orlgen-sdk", daemon=True)
        self.thread.start()
        self.clients: dict[Connection, ors.Client] = {}  # closed at exit
        self.pending: set[concurrent.futures.Future[Any]] = set()  # background work, awaited at exit
        self.watches: set[concurrent.futures.Future[Any]] = set()  # background watches, cancelled at exit

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        """`await coro` on the loop. A timeout or an interrupt (Ctrl-C) cancels it there at once:
        its `async with` blocks then close what they opened (a session is deleted), for which an
        interrupt waits a moment, instead of the request running on to its end unwanted."""
        if threading.current_thread() is self.thread:
            raise RuntimeError("orlgen cannot wait for its loop from the loop's own thread")
        settled = threading.Event()

        async def tracked() -> T:
            try:
                return await coro
            finally:
                settled.set()

        future = asyncio.run_coroutine_threadsafe(tracked(), self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise CallTimeout(f"no answer within {timeout:g} s") from None
        except BaseException:  # KeyboardInterrupt and the like: nobody wants the answer now
            future.cancel()
            settled.wait(_CLEANUP_SECONDS)
            raise

    def submit(self, coro: Coroutine[Any, Any, Any]) -> None:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self.pending.add(future)
        future.add_done_callback(self.pending.discard)

    def watch(self, coro: Coroutine[Any, Any, None]) -> None:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self.watches.add(future)
        future.add_done_callback(self.watches.discard)


_sigterm_checked = False  # the main thread looked at SIGTERM's handler once
_lock = process.lock()
_loops: dict[int, _Loop] = process.per_process({})  # a child forgets the parent's loop (see `process`)
_exit_hooks: list[Callable[[], None]] = []


def _sdk_loop() -> _Loop:
    # Keyed by pid: a forked child builds its own loop thread, never the parent's.
    with _lock:
        loop = _loops.get(os.getpid())
        if loop is None:
            loop = _loops[os.getpid()] = _Loop()
    return loop


def _client(connection: Connection) -> ors.Client:
    """The ORS client for `connection`, made once per process (on the loop)."""
    from ..ors import client as ors

    clients = _sdk_loop().clients
    if connection not in clients:
        clients[connection] = ors.Client(
            connection.url, connection.catalog, connection.env, connection.api_key, connection.max_answer_bytes
        )
    return clients[connection]


def install_sigterm() -> None:
    """Make SIGTERM run the exit hooks (which delete the open sessions): `atexit` does not run on
    a signal's default action, and TRL's async worker is stopped with SIGTERM. Only when the
    process has no handler of its own, and only from the main thread (where Python runs handlers);
    the handler raises SystemExit, so the process exits as it would have, after cleaning up."""
    global _sigterm_checked
    if _sigterm_checked or threading.current_thread() is not threading.main_thread():
        return
    _sigterm_checked = True
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
    except (ValueError, OSError):  # not the main interpreter, or no signals here
        pass


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def on_exit(hook: Callable[[], None]) -> None:
    """Run `hook` at interpreter exit, while the runtime's loop still runs."""
    _exit_hooks.append(hook)


@atexit.register
def _run_exit_hooks() -> None:
    while _exit_hooks:
        hook = _exit_hooks.pop()
        try:
            hook()
        except Exception:  # exit is best effort; the server reaps what we miss
            pass
    loop = _loops.get(os.getpid())
    if loop is None:
        return
    for watch in list(loop.watches):
        watch.cancel()
    concurrent.futures.wait(list(loop.pending), timeout=5.0)  # sessions being deleted

    async def close_everything() -> None:
        from ..ors.session import close_all

        await close_all()  # any session no adapter held any more
        await asyncio.gather(*(client.aclose() for client in loop.clients.values()), return_exceptions=True)

    try:
        loop.run(close_everything(), timeout=5.0)
    except Exception:
        pass
