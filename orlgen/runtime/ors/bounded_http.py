"""Blocking HTTP under the bounds orlgen keeps with an ORS server, for the requests to
OpenReward's rollout API (`orlgen.runtime.ors.rollouts`: `eval --upload` and the training
uploader; the model's endpoint is asked by the agent loop's async client,
`orlgen.runtime.agent.endpoint`, under the same bounds and with the same `origin`).

The API is as untrusted as an environment server: any host the configuration names. So a request here
- sends the caller's headers, and so its key (the rollout API's `x-api-key`, for `eval --upload`
  and the training uploader alike), to the URL's origin only: a redirect to the same origin is
  followed (a few times), one to another origin is refused before anything is sent there (the
  agent loop's client keeps its `Authorization` to the model's endpoint by the same `origin`);
- ends at a deadline, however the answer arrives: a socket timeout bounds one read, not their
  sum (a body trickling a byte at a time would never end), so a timer shuts the socket down at
  the deadline and every blocked read returns;
- reads at most `limit` bytes of answer, refused as soon as the bound is passed.

Plain `http.client` (one connection per request, as `urllib` did before): the deadline needs
the socket, which `urllib` hides.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5
_CHUNK = 64 * 1024


class EndpointError(OSError):
    """A request that ended without a usable answer, for a reason orlgen decided (not the network)."""


class DeadlinePassed(EndpointError):
    """The whole request (connect, headers and body) did not finish in time."""


class AnswerTooLarge(EndpointError):
    """The answer was larger than the bound."""


class RedirectRefused(EndpointError):
    """The endpoint redirected to another origin, or too many times."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def origin(url: str) -> str:
    """`scheme://host:port` of `url`, the port made explicit: what a key is bound to."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def request(
    url: str, method: str, headers: Mapping[str, str], data: bytes | None, *, deadline: float, limit: int
) -> Answer:
    """`method url`, following same-origin redirects, done by `deadline` (a `time.monotonic()`
    value) with at most `limit` bytes of answer. Any status comes back as an `Answer`."""
    home = origin(url)
    for _ in range(MAX_REDIRECTS + 1):
        status, location, body = _once(url, method, headers, data, deadline, limit)
        if status not in REDIRECTS or not location:
            return Answer(status, body)
        target = urllib.parse.urljoin(url, location)
        if origin(target) != home:
            raise RedirectRefused(
                f"the endpoint redirected to another origin ({origin(target)}): refused, the key goes "
                f"only to {home}"
            )
        url = target
    raise RedirectRefused(f"the endpoint redirected more than {MAX_REDIRECTS} times")


def _once(
    url: str, method: str, headers: Mapping[str, str], data: bytes | None, deadline: float, limit: int
) -> tuple[int, str | None, bytes]:
    """One request on its own connection: (status, Location, body)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlinePassed("no time left for the request")
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname, parts.port, timeout=left)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.connect()
        with _ShutAt(connection.sock, deadline) as timer:
            try:
                connection.request(method, path, body=data, headers=dict(headers))
                response = connection.getresponse()
                answer = response.status, response.getheader("Location"), _body(response, limit)
            except (OSError, http.client.HTTPException) as exc:
                if timer.fired or isinstance(exc, TimeoutError):  # the socket's own timeout is the same deadline
                    raise DeadlinePassed("the answer did not arrive in time") from exc
                raise
        if timer.fired:  # a shut socket reads as the end of the body: what came is cut short
            raise DeadlinePassed("the answer did not arrive in time")
        return answer
    finally:
        connection.close()


def _body(response: http.client.HTTPResponse, limit: int) -> bytes:
    """The body, refused as soon as it passes `limit` bytes (announced or not)."""
    announced = response.getheader("Content-Length")
    if announced and announced.strip().isdigit() and int(announced) > limit:
        raise AnswerTooLarge(f"the endpoint's answer is {int(announced)} bytes, over the {limit}-byte limit")
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read1(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise AnswerTooLarge(f"the endpoint's answer exceeds the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


class _ShutAt:
    """Shut `sock` down at `deadline`: whatever read is blocked then returns at once. `fired`
    says whether it did (a shut socket looks like the end of the answer)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.fired = False
        self._sock = sock
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._shut)
        self._timer.daemon = True

    def _shut(self) -> None:
        with self._lock:
            self.fired = True
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed
                pass

    def __enter__(self) -> _ShutAt:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:  # a shutdown under way has finished, and none starts after this
            self._timer.cancel()
