"""One open ORS session on the wire, and the process's open sessions.

A `Session` is what `Client.open_session` returns: its requests carry its id (`X-Session-ID`),
and its answers reach the layers above validated (`blocks`): `call_tool` and `call_terminal_tool`
return a `blocks.Step`, `get_prompt` the prompt's blocks; a value the protocol does not allow is
a `blocks.WireError`. It ends with `/delete`, then `/delete_session` in the background, whatever
happens (`close`). One keepalive task per process and event loop pings every open session every
`PING_EVERY` seconds, well inside the server's 900 s reaper; `close_all` deletes those still open
at exit.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Coroutine, Mapping
from types import SimpleNamespace
from typing import Any, Protocol

from .. import process
from . import blocks as _wire
from .errors import SessionGone, StatusError, StreamBroken, ToolRefused, payment_required

CLOSE_TIMEOUT = 5.0  # per delete request: a stopped server must not hold the exit
PING_EVERY = 10.0  # as the SDK pings: a server whose clock or reaper runs fast still sees each session alive


class Requests(Protocol):
    """What a session asks of the `client.Client` that opened it (named here, not imported: the
    client imports this module)."""

    async def request(
        self, method: str, path: str, body: Any = None, sid: str | None = None, *, busy: bool = ..., window: float = ...
    ) -> Any: ...

    async def stream(self, path: str, body: dict[str, Any], sid: str | None = None) -> tuple[Any, str | None]: ...

    def route(self, suffix: str) -> str: ...

    def in_background(self, request: Coroutine[Any, Any, None]) -> None: ...


class Session:
    """One open ORS session. Its methods are named as the SDK's, which the adapter used."""

    def __init__(self, client: Requests, sid: str) -> None:
        self.client = client
        self.sid = sid
        self.gone: BaseException | None = None  # set when a ping learns the server dropped it
        self.closed = False  # `/delete` sent
        self.retired = False  # `/delete_session` sent
        self._terminal: Any = None
        self._tools: list[Any] | None = None
        self._messages_route = True

    async def _request(self, method: str, suffix: str, body: Any = None) -> Any:
        self._raise_if_gone()
        try:
            return await self.client.request(method, self.client.route(suffix), body, sid=self.sid)
        except StatusError as exc:
            raise _session_status(exc) from exc

    async def _stream(self, suffix: str, body: dict[str, Any]) -> Any:
        """An SSE request of the session (`/call`, `/score_group`): its answer."""
        self._raise_if_gone()
        try:
            answer, _ = await self.client.stream(self.client.route(suffix), body, sid=self.sid)
        except StatusError as exc:
            raise _session_status(exc) from exc
        return answer

    def _raise_if_gone(self) -> None:
        if self.gone is not None:
            raise SessionGone(str(self.gone))

    async def list_tools(self) -> list[Any]:
        """The session's tools (`task_tools`; `tools` on a server without it), each with `name`,
        `description`, `input_schema`; remembers the terminal tool."""
        try:
            answer = await self._request("GET", "/task_tools")
        except SessionGone as exc:
            if not _is_404(exc):
                raise
            answer = await self._request("GET", "/tools")
        self._terminal = answer.get("terminal_tool") or None
        self._tools = [SimpleNamespace(**tool) for tool in answer["tools"]]
        return self._tools

    async def get_prompt(self) -> tuple[_wire.Block, ...]:
        """The task's prompt, its blocks validated (`WireError` when one is malformed)."""
        return _wire.blocks(await self._request("GET", "/prompt"))

    async def get_messages(self) -> list[Any]:
        """The task's conversation; a server without `/messages` gives its prompt as one user turn."""
        if self._messages_route:
            try:
                answer = await self._request("GET", "/messages")
                return [SimpleNamespace(role=m.get("role"), blocks=_wire.parsed(m.get("blocks"))) for m in answer]
            except SessionGone as exc:
                if not _is_404(exc):
                    raise
                self._messages_route = False
        return [SimpleNamespace(role="user", blocks=await self.get_prompt())]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> _wire.Step:
        """Run a tool: its output validated (`WireError` when a value is not the protocol's),
        `ToolRefused` for `ok: false`, `ToolRaised` when it raised."""
        answer = await self._stream("/call", {"name": name, "input": dict(arguments)})
        if not isinstance(answer, Mapping):
            raise StreamBroken(f"the call's answer is not an object: {type(answer).__name__}")
        if answer.get("ok") is False:
            raise ToolRefused(str(answer.get("reason") or "not_found"), str(answer.get("error", "")))
        return _wire.tool_output(answer.get("output"))

    async def call_terminal_tool(self, message: str) -> _wire.Step:
        """The env's `@terminal` tool on the model's final message (its one argument, if any)."""
        if self._tools is None:
            await self.list_tools()
        term = self._terminal
        if not isinstance(term, Mapping) or not term.get("name"):
            raise ToolRefused("not_found", "the environment has no @terminal tool")
        arg = term.get("arg")
        return await self.call_tool(str(term["name"]), {arg: message} if arg else {})

    async def score_group(self, candidates: list[dict[str, Any]]) -> list[float]:
        """The env's scores of a group's `candidates` for this session's task (`/score_group`,
        SSE like `/call`): one float per candidate, in order."""
        answer = await self._stream("/score_group", {"candidates": candidates})
        scores = answer.get("scores") if isinstance(answer, Mapping) else None
        if not isinstance(scores, list) or len(scores) != len(candidates):
            raise StreamBroken(f"score_group answered {type(scores).__name__} for {len(candidates)} candidates")
        rewards = [score.get("reward") if isinstance(score, Mapping) else None for score in scores]
        if not all(isinstance(r, int | float) and not isinstance(r, bool) for r in rewards):
            raise StreamBroken("score_group answered a score that is not a number")
        return [float(r) for r in rewards]  # type: ignore[arg-type]

    async def ping(self) -> None:
        try:
            await self.client.request("POST", "/ping", sid=self.sid, window=0.0)
        except StatusError as exc:
            if exc.status in (404, 410):
                self.gone = _session_status(exc)

    async def close(self) -> None:
        """`/delete`, then `/delete_session` in the background: `delete` and `retire`."""
        await self.delete()
        self.retire()

    async def delete(self) -> None:
        """`/delete`, bounded, failures ignored (the server reaps what we miss); idempotent. Once
        it is answered the env has let the session go (an ORS server deletes its env instance
        there): what the session held can be given back (`admission.close_sessions`)."""
        if self.closed:
            return
        self.closed = True
        await self._bounded_post("/delete")
        open_sessions(asyncio.get_running_loop()).discard(self)

    def retire(self) -> None:
        """`/delete_session`, which only retires the session's id, sent in the background
        (`Client.in_background`), so neither a rollout queued for a slot nor the rollout's own
        last call (a finished episode's session is deleted inside it) waits for its round trip."""
        if not self.retired:
            self.retired = True
            self.client.in_background(self._bounded_post("/delete_session"))

    async def _bounded_post(self, path: str) -> None:
        try:
            await asyncio.wait_for(
                self.client.request("POST", path, sid=self.sid, window=0.5, busy=False), CLOSE_TIMEOUT
            )
        except Exception:
            pass

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _session_status(exc: StatusError) -> BaseException:
    """A session request's error status as the adapter reports it: 404/410 the session is gone,
    402 the account's one line (`payment_required`), any other as it is."""
    if exc.status == 402:
        return payment_required()
    if exc.status in (404, 410):
        gone = SessionGone(f"the server no longer has the session ({exc.status}: {exc.detail})")
        gone.status = exc.status  # type: ignore[attr-defined]
        return gone
    return exc


def _is_404(exc: BaseException) -> bool:
    return getattr(exc, "status", None) == 404


# -- the process's open sessions: one keepalive, and deletion at exit -------------------------

_registry: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set[Session]] = process.per_process(
    weakref.WeakKeyDictionary()
)
_keepalives: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task[None]] = process.per_process(
    weakref.WeakKeyDictionary()
)


def open_sessions(loop: asyncio.AbstractEventLoop) -> set[Session]:
    """The loop's open sessions; the first one starts the loop's keepalive task."""
    if loop not in _registry:
        _registry[loop] = set()
        _keepalives[loop] = loop.create_task(_keepalive(_registry[loop]))
    return _registry[loop]


async def _keepalive(sessions: set[Session]) -> None:
    """Ping every open session every `PING_EVERY` seconds (a session the server no longer has
    is marked gone; its next call says so)."""
    while True:
        await asyncio.sleep(PING_EVERY)
        await asyncio.gather(*(session.ping() for session in list(sessions)), return_exceptions=True)


async def close_all() -> None:
    """Delete every session still open on this loop (at exit)."""
    sessions = _registry.get(asyncio.get_running_loop(), set())
    await asyncio.gather(*(session.close() for session in list(sessions)), return_exceptions=True)
