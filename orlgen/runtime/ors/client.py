"""The ORS client: orlgen's runtime speaks the wire protocol itself, on aiohttp.

One `Client` per resolved `Connection` and process, used on the connection's event-loop thread
(`connection.run`). What it implements (see docs/design.md, "Wire"):

- Addressing: a URL target is asked directly, its env named in the path (`/{env}/...`) and in
  `X-Deployment`; a catalog target (`Owner/Env`) goes to the platform's sessions host with
  `X-Deployment: Owner/Env` and `X-API-Key` (`platform_urls` resolves `OPENREWARD_URL`,
  `OPENREWARD_SESSION_URL` and `OPENREWARD_API_URL` as the SDK does).
- The session: `/create_session` (SSE) → `/create`, then the session's own requests
  (`session.Session`, answers validated there) → `/delete` and `/delete_session`, whatever happens.
- Requests and streams, retried by `retry.Retry`. A request that changes the env (`SIDE_EFFECTS`:
  `/create`, `/call`, `/score_group`) is re-sent only when that cannot run it twice: when nothing
  reached the server (a refused connection; a 429 or 503, by which the server refused it), or, on
  a stream, with the `task_id` the server gave, so the server replays the one run's result. A 502
  or 504 (a gateway that may have forwarded it) or a broken connection ends it: the caller's
  rollout ends unscored, and a session `/create` may have built is deleted by its id.
- Liveness: no byte for `ORLGEN_HANG_SECONDS` (default 30) is a hung server (`Hung`), except
  while the server builds a session's env (`BUILDING`: it sends nothing then, for as long as the
  env's constructor or setup takes), bounded by `ORLGEN_STARTING_SECONDS` (default 600).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import urllib.parse
import urllib.request
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from . import secrets as _secrets
from . import sse, transport
from .errors import ServerGone, StreamBroken, ToolRaised
from .retry import REFUSED_WINDOW, STARTING_VAR, Retry, raise_for_status, starting_seconds
from .session import Session, open_sessions

DEFAULT_BASE_URL = "https://openreward.ai"
# POST routes that change the env's state when they run: not re-sent once they may have reached it
# (`/create` builds an env instance; `/call` and `/score_group` run the env's code). Any other
# request reads, pings or deletes, and is the same sent twice.
SIDE_EFFECTS = ("/create", "/call", "/score_group")
BROKEN_RETRIES = 5  # re-sends of a call whose stream broke after its task_id
CONNECT_TIMEOUT = 10.0
END_WAIT = 1.0  # seconds a call waits past its stream's `end` for the body's end; then read in the background
DEFAULT_LIMIT = 256 * 1024 * 1024  # bytes in one answer, streams included, unless the connection sets one
HANG_VAR = sse.HANG_VAR
# Session requests a server answers only once the env is built, sending nothing meanwhile: `/create`
# runs the env's constructor (the SDK's server), `/task_tools` waits for it (ors-sdk's, which builds
# the env with its setup after `/create`), `/messages` and `/prompt` wait for `setup()` (both).
# Their silence is no evidence of a hang: they are bounded by `starting_seconds()` instead.
BUILDING = ("/create", "/task_tools", "/messages", "/prompt")


def hang_seconds() -> float:
    return float(os.environ.get(HANG_VAR) or 30.0)


def platform_urls() -> tuple[str, str]:
    """The platform's (sessions, API) base URLs, resolved exactly as the SDK's client does."""
    base = os.environ.get("OPENREWARD_URL") or DEFAULT_BASE_URL
    return (
        os.environ.get("OPENREWARD_SESSION_URL") or _subdomain(base, "sessions"),
        os.environ.get("OPENREWARD_API_URL") or _subdomain(base, "api"),
    )


def _subdomain(url: str, name: str) -> str:
    parts = urllib.parse.urlparse(url)
    return urllib.parse.urlunparse(parts._replace(netloc=f"{name}.{parts.netloc}"))


@dataclass(frozen=True)
class Address:
    """Where a connection's requests go and how they name the environment."""

    base: str  # scheme://host[:port][/path], no trailing slash
    deployment: str  # X-Deployment
    prefix: str  # before env routes: "/{env}" on a URL target, "" on the platform
    env_name: str | None  # `env_name` in /create (a URL target's env)
    api_url: str | None  # the platform's API host, for the API key's allowed domains
    platform: bool

    @classmethod
    def of(cls, url: str | None, catalog: str | None, env: str) -> Address:
        if url is not None:
            return cls(url.rstrip("/"), env, f"/{env}", env, None, False)
        sessions, api = platform_urls()
        return cls(sessions.rstrip("/"), catalog or env, "", None, api, True)


class Client:
    """Requests to one environment, on one event loop (see the module docstring)."""

    def __init__(self, url: str | None, catalog: str | None, env: str, api_key: str | None, limit: int | None) -> None:
        self.address = Address.of(url, catalog, env)
        self.api_key = api_key
        self.limit = limit or DEFAULT_LIMIT
        self._http: aiohttp.ClientSession | None = None
        self._trailing: set[asyncio.Task[None]] = set()  # requests nobody waits for (`in_background`)
        self._draining: set[asyncio.Task[None]] = set()  # answered streams read to their body's end (`_release`)
        self._secrets_in_body: bool | None = None  # asked once (`secrets_in_body`)

    def http(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, resolver=_Resolver()),
                response_class=transport.guarded_response(self.limit),
            )
        return self._http

    @functools.cached_property
    def proxy(self) -> str | None:
        """The proxy the environment's variables name for this server (`HTTPS_PROXY`, `NO_PROXY`...),
        as the SDK's `trust_env` honoured them. Read once, here: aiohttp's `trust_env` would also
        read `~/.netrc` on the loop's thread pool at every request, and that pool is gone at exit,
        when the open sessions must still be deleted."""
        parts = urllib.parse.urlsplit(self.address.base)
        if urllib.request.proxy_bypass(parts.hostname or ""):
            return None
        return urllib.request.getproxies().get(parts.scheme)

    def headers(self, sid: str | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {"User-Agent": "orlgen", "X-Deployment": self.address.deployment}
        if self.api_key:
            headers["X-API-Key"] = self.api_key
        if sid:
            headers["X-Session-ID"] = sid
        return {**headers, **(extra or {})}

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        sid: str | None = None,
        extra: Mapping[str, str] | None = None,
        busy: bool = True,
        window: float = REFUSED_WINDOW,
    ) -> Any:
        """One JSON request, retried by `Retry` (`busy=False`: a busy answer is the caller's to
        wait out). Returns the parsed answer, None for an empty body."""
        retry = Retry(busy, window)
        silence, variable = (
            (starting_seconds(), STARTING_VAR) if path.endswith(BUILDING) else (hang_seconds(), HANG_VAR)
        )
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=silence)
        while True:
            try:
                async with self.http().request(
                    method,
                    self.address.base + path,
                    json=body,
                    headers=self.headers(sid, extra),
                    timeout=timeout,
                    proxy=self.proxy,
                ) as response:
                    await raise_for_status(response)
                    data = await response.read()
                    return json.loads(data) if data.strip() else None
            except Exception as exc:
                wait = retry.wait(exc, idempotent=method == "GET" or not path.endswith(SIDE_EFFECTS))
                if wait is None:
                    raise _plain(exc, silence, variable) from exc
                await asyncio.sleep(wait)

    async def stream(
        self,
        path: str,
        body: dict[str, Any],
        sid: str | None = None,
        extra: Mapping[str, str] | None = None,
        busy: bool = True,
    ) -> tuple[Any, str | None]:
        """POST and read the SSE answer: `(result, task_id)`. After a break the request is re-sent
        with the `task_id` the server gave (the server replays that one run); before it, only when
        nothing reached the server (a refused connection, a backend still starting)."""
        task_id: str | None = None
        retry = Retry(busy, REFUSED_WINDOW)
        hang = hang_seconds()
        # Bounded from the request on: a server stopped between two calls never sends the
        # headers, and one stopped mid-call no byte of the stream (it pings every 10 s).
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT, sock_read=hang)
        while True:
            payload = {**body, "task_id": task_id} if task_id else body
            try:
                response = await self.http().post(
                    self.address.base + path,
                    json=payload,
                    headers=self.headers(sid, {"Accept": "text/event-stream", **(extra or {})}),
                    timeout=timeout,
                    proxy=self.proxy,
                )
                answered = False  # the server sent its last event: the body's end follows
                try:
                    await raise_for_status(response)
                    parts: list[str] = []
                    async for event, data in sse.events(response.content, hang):
                        if event == "task_id":
                            if task_id is None:
                                retry = Retry(busy, REFUSED_WINDOW, broken=BROKEN_RETRIES)
                            task_id = data.strip() or task_id
                        elif event in ("chunk", "end"):
                            parts.append(data)
                            if event == "end":
                                answered = True
                                text = "".join(parts)
                                await _read_to_end(response.content, END_WAIT)
                                return (json.loads(text) if text else None), task_id
                        elif event == "error":
                            answered = True
                            raise ToolRaised(data or "the tool raised (no message)")
                    raise StreamBroken("the stream ended before its end event")
                finally:
                    self._release(response, answered)
            except (ToolRaised, sse.Hung, sse.EventTooLarge, transport.AnswerTooLarge):
                raise
            except Exception as exc:
                wait = retry.wait(exc, idempotent=task_id is not None)
                if wait is None:
                    raise _plain(exc, hang, HANG_VAR) from exc
                await asyncio.sleep(wait)

    # -- the environment, outside any session --------------------------------------------------

    def route(self, suffix: str) -> str:
        return self.address.prefix + suffix

    async def list_splits(self) -> list[Any]:
        """The env's splits (the eval preflight's reachability check)."""
        answer = await self.request("GET", self.route("/splits"))
        return list(answer or [])

    async def num_tasks(self, split: str) -> int:
        answer = await self.request("POST", self.route("/num_tasks"), {"split": split})
        return int(answer["num_tasks"])

    async def get_task_range(self, split: str, start: int | None, stop: int | None) -> list[dict[str, Any]]:
        """The task specs of `split[start:stop]`."""
        payload: dict[str, Any] = {"split": split}
        payload.update({key: value for key, value in (("start", start), ("stop", stop)) if value is not None})
        answer = await self.request("POST", self.route("/task_range"), payload)
        return list(answer["tasks"])

    async def version(self) -> Any:
        return await self.request("GET", "/version")

    async def open_session(
        self,
        split: str | None = None,
        index: int | None = None,
        task_spec: dict[str, Any] | None = None,
        secrets: Mapping[str, Any] | None = None,
        toolset: str | None = None,
        env_overrides: Mapping[str, str] | None = None,
    ) -> Session:
        """A new session on the task (`split`/`index`, or an ad-hoc `task_spec`). A session the
        server named is deleted again when `/create` fails. Busy answers (429/503) are raised
        for `backoff` to wait out, with their `Retry-After`.

        `toolset` (a built-in toolset's name) and `env_overrides` travel as the SDK sends them:
        `toolset_name` in `/create`'s body, the overrides as `env` in `/create_session`'s.
        Secrets travel as the server reads them (`secrets_in_body`): in `/create`'s body to a
        server whose schema asks for them there (ors-sdk), else in `X-Secrets` (the SDK's way)."""
        chosen = self.session_secrets(secrets)
        in_body = bool(chosen) and await self.secrets_in_body()
        extra = {"X-Secrets": _secrets.header(chosen)} if chosen and not in_body else {}
        opening = {"env": dict(env_overrides)} if env_overrides else {}
        _, sid = await self.stream("/create_session", opening, extra=extra, busy=False)
        if not sid:
            raise StreamBroken("/create_session named no session")
        session = Session(self, sid)
        try:
            create: dict[str, Any] = {"split": split, "index": index} if task_spec is None else {"task_spec": task_spec}
            if self.address.env_name is not None:
                create["env_name"] = self.address.env_name
            if toolset is not None:
                create["toolset_name"] = toolset
            if in_body:
                create["secrets"] = {name: value for name, (value, _) in chosen.items()}
            await self.request("POST", "/create", create, sid=sid, extra=extra, busy=False)
        except BaseException:
            await asyncio.shield(session.close())
            raise
        open_sessions(asyncio.get_running_loop()).add(session)
        return session

    def session_secrets(self, given: Mapping[str, Any] | None) -> _secrets.Secrets:
        """The secrets this server may receive for a new session (`secrets.for_host`)."""
        base = self.address.base
        chosen = _secrets.with_api_key(_secrets.allowed(given, base), self.api_key, base, self.address.api_url)
        return _secrets.for_host(chosen, base, self.address.platform)

    async def secrets_in_body(self) -> bool:
        """Whether this server reads a session's secrets from `/create`'s body (ors-sdk 0.1.0,
        which ignores `X-Secrets`) rather than from `X-Secrets` (the SDK's server, which refuses a
        `secrets` field). Told by the server's own schema of that body (`/openapi.json`, which
        both serve): the `secrets` property is there only where it is read. Asked once per client,
        and only of a URL target with secrets to send; a server without the schema, or the
        platform, gets the header."""
        if self._secrets_in_body is None:
            self._secrets_in_body = False if self.address.platform else await self._schema_asks_for_secrets()
        return self._secrets_in_body

    async def _schema_asks_for_secrets(self) -> bool:
        try:
            schema = await self.request("GET", "/openapi.json", window=0.0)
            fields = schema["components"]["schemas"]["CreateSession"]["properties"]
        except Exception:  # no schema, or not this shape: the SDK's way
            return False
        return isinstance(fields, Mapping) and "secrets" in fields

    def in_background(self, request: Coroutine[Any, Any, None]) -> None:
        """Send `request` without waiting for it; `aclose` does (each such request is bounded)."""
        task = asyncio.get_running_loop().create_task(request)
        self._trailing.add(task)
        task.add_done_callback(self._trailing.discard)

    def _release(self, response: aiohttp.ClientResponse, answered: bool) -> None:
        """Give a stream's connection back. aiohttp pools a connection only once its response's
        body has ended, and closes it otherwise. A stream the server has `answered` (its last
        event sent) ends its body next, but under load that end can come after the caller stopped
        waiting for it (`END_WAIT`): the body is then read to its end in the background, bounded by
        the hang bound, and the connection pooled after all (closing it instead cost a new TCP
        connection per late stream: at 256 sessions, half of all calls). A stream left mid-way
        (broken, hung, too large) is closed at once: its connection holds unread bytes."""
        if not answered or response.content.is_eof():
            response.release()
            return
        drain = asyncio.get_running_loop().create_task(_release_at_body_end(response, hang_seconds()))
        self._draining.add(drain)
        drain.add_done_callback(self._draining.discard)

    async def aclose(self) -> None:
        if self._trailing:
            await asyncio.wait(set(self._trailing))
        for drain in self._draining:  # nobody waits for a body's end any more: its connection goes
            drain.cancel()
        await asyncio.gather(*self._draining, return_exceptions=True)
        if self._http is not None:
            await self._http.close()


class _Resolver(aiohttp.ThreadedResolver):
    """aiohttp's resolver, which asks the loop's thread pool; at interpreter exit that pool takes
    no more work (threads are shut down before `atexit` runs), and the sessions still open must
    be deleted then: so the name is resolved here, blocking, instead."""

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[Any]:
        try:
            return await super().resolve(host, port, family)
        except RuntimeError:
            infos = socket.getaddrinfo(host, port, family=family, type=socket.SOCK_STREAM)
            flags = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
            return [
                {
                    "hostname": host,
                    "host": address[0],
                    "port": address[1],
                    "family": found,
                    "proto": proto,
                    "flags": flags,
                }
                for found, _, proto, _, address in infos
            ]


async def _read_to_end(content: Any, within: float) -> None:
    """Read a stream past its last event to the end of the HTTP body (the chunked terminator,
    which the server sends next), for at most `within` seconds, so that aiohttp can put the
    connection back in its pool (`Client._release`); the connection itself is none of its business."""
    try:
        async with asyncio.timeout(within):
            while await content.readany():
                pass
    except (TimeoutError, aiohttp.ClientError, transport.AnswerTooLarge):
        pass


async def _release_at_body_end(response: aiohttp.ClientResponse, within: float) -> None:
    """The rest of an answered stream read in the background, then its connection given back:
    pooled if its body ended, closed if not within `within` seconds (or the client closes)."""
    try:
        await _read_to_end(response.content, within)
    finally:
        response.release()


def _plain(exc: BaseException, silence: float, variable: str) -> BaseException:
    """The error a caller sees: a refused connection is `ServerGone`, a read timeout `Hung`,
    naming the variable that sets the bound it ran into."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return ServerGone(f"the server refuses connections ({exc.os_error or exc})")
    if isinstance(exc, TimeoutError):
        return sse.Hung(f"no byte from the server for {silence:g} s ({variable})")
    return exc
