"""Guards on aiohttp responses: answers bounded in size, redirects kept to one origin.

aiohttp sets no bound of its own: whole JSON bodies are read into memory, and a stream is read
as it comes (aiohttp bounds a line, not their sum), so a hostile server could make a client hold
any amount of memory. And aiohttp follows redirects to any origin, dropping only `Authorization`
and cookies: `X-API-Key` and `X-Secrets` would go along. aiohttp builds responses from the
client's `response_class`, and that response class is where both guards live: the runtime's ORS
client (`ors.Client`, which capture speaks through too) is built with it.

`aiohttp` is imported only when a response class is built, not with the runtime.
"""

from __future__ import annotations

from typing import Any

from .. import process

REDIRECTS = (301, 302, 303, 307, 308)


class AnswerTooLarge(RuntimeError):
    """A server's answer exceeded the size bound of the connection."""


class RedirectRefused(RuntimeError):
    """A server redirected a request to another origin (another scheme, host or port)."""


def guarded_response(limit: int | None) -> type:
    """An aiohttp response class with the guards (also for orlgen's own requests)."""
    import aiohttp

    class GuardedResponse(aiohttp.ClientResponse):
        async def start(self, connection: Any) -> Any:
            started = await super().start(connection)
            refuse_cross_origin(self)
            if limit is not None:
                if self.content_length is not None and self.content_length > limit:
                    raise AnswerTooLarge(
                        f"the server's answer is {self.content_length} bytes, over the {limit}-byte limit"
                    )
                bound_stream(self.content, limit)
            return started

    return GuardedResponse


def refuse_cross_origin(response: Any) -> None:
    """A redirect to another origin is an error, raised before aiohttp follows it."""
    location = response.headers.get("Location")
    if response.status not in REDIRECTS or not location:
        return
    from yarl import URL

    try:
        target = response.url.join(URL(location))
        same = target.origin() == response.url.origin()
    except ValueError:  # aiohttp refuses such a location itself; so do we
        target, same = location, False
    if not same:
        raise RedirectRefused(f"the server redirected {response.url.path} to another origin ({target}): refused")


def bound_stream(content: Any, limit: int) -> None:
    """Make the response's stream refuse data past `limit` bytes in total, as it arrives: a JSON
    body and a stream of session events alike. The stream object is fed by
    aiohttp's parser, which holds it, so the bound goes on it in place: its class becomes a
    subclass whose `feed_data` counts (the subclass adds no slots, so the swap is layout-safe).
    """
    import aiohttp

    if type(content) is aiohttp.StreamReader:  # not the shared empty payload of a body-less answer
        content.__class__ = _bounded_stream_class(limit)


_stream_classes: dict[int, type] = process.per_process({})


def _bounded_stream_class(limit: int) -> type:
    if limit not in _stream_classes:
        import aiohttp

        class BoundedStream(aiohttp.StreamReader):
            __slots__ = ()

            def feed_data(self, data: bytes, size: int = 0) -> bool:
                if self.total_bytes + len(data) > limit:
                    if self.exception() is None:
                        self.set_exception(AnswerTooLarge(f"the server's answer exceeds the {limit}-byte limit"))
                    return False
                return super().feed_data(data, size)

        _stream_classes[limit] = BoundedStream
    return _stream_classes[limit]


async def get_json_bytes(url: str, limit: int, api_key: str | None) -> bytes:
    """GET `url` with the same guards, and the key as the SDK sends it (for the one request
    orlgen makes without the SDK)."""
    import aiohttp

    headers = {"X-API-Key": api_key} if api_key else {}
    # trust_env as the SDK's own clients: the same proxy settings reach the same server
    async with aiohttp.ClientSession(response_class=guarded_response(limit), trust_env=True) as session:
        async with session.get(url, headers=headers) as response:
            response.raise_for_status()
            return await response.read()
