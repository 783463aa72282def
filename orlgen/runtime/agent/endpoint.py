"""An OpenAI-compatible chat endpoint, asked under the bounds orlgen keeps with an ORS server.

The endpoint is untrusted: a trainer's inference server, a colleague's vLLM, a hosted API, or
whatever a `base_url` names. So a request here
- sends the key (`Authorization`) to `base_url`'s origin only: a redirect within the origin is
  followed (a few times), one to another origin is refused before anything is sent there;
- ends at a deadline per turn, retries included, however slowly the answer arrives;
- reads at most `max_answer_bytes` of answer, refused as soon as the bound is passed.

It speaks through aiohttp, a connection per request (the endpoint may be asked from several
event loops; and a server that writes an answer's head and body apart without TCP_NODELAY stalls
a reused connection by the peer's delayed ACK, about 40 ms a turn, measured with
`bench.chat_server`), or through the `httpx.AsyncClient` a trainer hands its agents (AReaL
does), used as it is (duck-typed: httpx is not imported). A streamed answer (`stream=True` among the sampling
parameters) is read whole, under the same bounds, and assembled into the choice a plain answer
holds.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import OrlgenRuntimeError, described
from ..ors.bounded_http import origin

MAX_ANSWER_BYTES = 32 * 2**20  # a chat completion is kilobytes; 32 MiB leaves room for any real one
RETRIED = (429, 500, 502, 503, 504)  # answers worth asking again, with back-off
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5
_CHUNK = 64 * 1024


class EndpointError(OrlgenRuntimeError):
    """One model turn failed (an HTTP error, a malformed or oversized answer, the deadline): the
    episode ends unscored. The message is one line."""


class _Refused(Exception):
    """A request ended for a reason orlgen decided (not the network): never retried."""


@dataclass(frozen=True)
class _Answer:
    status: int
    location: str | None
    body: bytes


class Endpoint:
    """`POST {base_url}/chat/completions` with tool calling, and `GET {base_url}/models`.

    `turn_timeout` bounds one turn, retries included; `timeout_name` is how a message names that
    bound to the person who set it (`orlgen eval` says `--turn-timeout`)."""

    RETRIES = 3  # on 429 and 5xx answers and transport errors

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        http_client: Any = None,
        turn_timeout: float = 300.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        timeout_name: str = "turn_timeout",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.http_client = http_client
        self.turn_timeout = turn_timeout
        self.max_answer_bytes = max_answer_bytes
        self.timeout_name = timeout_name

    async def reachable(self, timeout: float) -> None:
        """Return when `GET /models` gets any HTTP answer (a server without that route is still
        up); raise `EndpointError` saying why when a refused connection, no answer or a refused
        redirect is all there is."""
        try:
            async with asyncio.timeout(timeout):
                await self._request("GET", "/models", None)
        except TimeoutError as exc:
            raise EndpointError(f"no answer within {timeout:g} s") from exc
        except _Refused as exc:
            raise EndpointError(str(exc)) from exc
        except Exception as exc:  # aiohttp's and httpx's transport errors share no base
            raise EndpointError(described(exc)) from exc

    async def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The endpoint's first choice for `body` (as it sent it: `message`, and `logprobs`,
        `finish_reason` or a server's token ids where it sent them). Raises `EndpointError`."""
        answer = await self._post_with_retries(json.dumps(body).encode())
        choice = _stream_choice(answer) if body.get("stream") else _first_choice(_json(answer))
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise EndpointError(f"the endpoint's choices[0].message is not an object: {str(message)[:200]}")
        return choice

    async def _post_with_retries(self, data: bytes) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.turn_timeout
        late = f"no answer within {self.timeout_name} {self.turn_timeout:g} s"
        for attempt in range(self.RETRIES + 1):
            try:
                async with asyncio.timeout_at(deadline):
                    answer = await self._request("POST", "/chat/completions", data)
            except TimeoutError as exc:
                raise EndpointError(late) from exc
            except _Refused as exc:
                raise EndpointError(f"the endpoint failed: {exc}") from exc
            except Exception as exc:  # aiohttp's and httpx's transport errors share no base
                if attempt == self.RETRIES:
                    raise EndpointError(f"the endpoint failed: {described(exc)}") from exc
            else:
                if answer.status < 300:
                    return answer.body
                if answer.status not in RETRIED or attempt == self.RETRIES:
                    detail = answer.body[:300].decode(errors="replace")
                    raise EndpointError(f"the endpoint answered HTTP {answer.status}: {detail}")
            pause = 0.5 * 2**attempt
            if loop.time() + pause >= deadline:
                raise EndpointError(late)
            await asyncio.sleep(pause)
        raise AssertionError("unreachable")

    async def _request(self, method: str, path: str, data: bytes | None) -> _Answer:
        """`method base_url+path`, following redirects within the origin only."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = self.base_url + path
        home = origin(url)
        for _ in range(MAX_REDIRECTS + 1):
            answer = await self._once(method, url, headers, data)
            if answer.status not in REDIRECTS or not answer.location:
                return answer
            target = urllib.parse.urljoin(url, answer.location)
            if origin(target) != home:
                raise _Refused(
                    f"the endpoint redirected to another origin ({origin(target)}): refused, the key goes "
                    f"only to {home}"
                )
            url = target
        raise _Refused(f"the endpoint redirected more than {MAX_REDIRECTS} times")

    async def _once(self, method: str, url: str, headers: dict[str, str], data: bytes | None) -> _Answer:
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise _Refused(f"not an http(s) URL: {url}")
        if self.http_client is not None:
            request = self.http_client.stream(method, url, content=data, headers=headers, follow_redirects=False)
            async with request as response:
                body = await _bounded(response.aiter_bytes(), response.headers, self.max_answer_bytes)
                return _Answer(response.status_code, response.headers.get("Location"), body)
        import aiohttp

        async with aiohttp.ClientSession() as session:
            request = session.request(method, url, data=data, headers=headers, allow_redirects=False)
            async with request as response:
                chunks = response.content.iter_chunked(_CHUNK)
                body = await _bounded(chunks, response.headers, self.max_answer_bytes)
                return _Answer(response.status, response.headers.get("Location"), body)


async def _bounded(chunks: AsyncIterator[bytes], headers: Mapping[str, str], limit: int) -> bytes:
    """The body, refused as soon as it passes `limit` bytes (announced or not)."""
    announced = headers.get("Content-Length")
    if announced and announced.strip().isdigit() and int(announced) > limit:
        raise _Refused(f"the endpoint's answer is {int(announced)} bytes, over the {limit}-byte limit")
    received: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _Refused(f"the endpoint's answer exceeds the {limit}-byte limit")
        received.append(chunk)
    return b"".join(received)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError as exc:
        raise EndpointError(f"the endpoint's answer is not JSON: {body[:200].decode(errors='replace')}") from exc


def _first_choice(answer: Any) -> Any:
    """The answer's first choice. vLLM sends the prompt's token ids beside the choices (asked
    with `return_token_ids`): they go on the choice, as ART's client puts them, since a
    token-level trainer reads them there."""
    try:
        choice = answer["choices"][0]
    except (KeyError, IndexError, TypeError) as exc:
        raise EndpointError(f"the endpoint's answer has no choices[0].message: {str(answer)[:200]}") from exc
    if isinstance(choice, dict) and "prompt_token_ids" in answer and "prompt_token_ids" not in choice:
        return {**choice, "prompt_token_ids": answer["prompt_token_ids"]}
    return choice


def _stream_choice(body: bytes) -> dict[str, Any]:
    """A streamed answer's (`data:` events of chunks, then `[DONE]`) first choice, assembled as a
    plain answer holds it: the content and each tool call's arguments joined, logprobs joined."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict[str, Any]] = {}
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": None}
    logprobs: list[Any] = []
    for line in body.decode(errors="replace").splitlines():
        data = line.removeprefix("data:").strip() if line.startswith("data:") else ""
        if not data or data == "[DONE]":
            continue
        chunk = _json(data.encode())
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        for delta_choice in choices if isinstance(choices, list) else ():
            if not isinstance(delta_choice, dict) or delta_choice.get("index", 0) != 0:
                continue
            _merge_delta(message, calls, delta_choice.get("delta") or {})
            choice["finish_reason"] = delta_choice.get("finish_reason") or choice["finish_reason"]
            logprobs += (delta_choice.get("logprobs") or {}).get("content") or ()
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    if logprobs:
        choice["logprobs"] = {"content": logprobs}
    return choice


def _merge_delta(message: dict[str, Any], calls: dict[int, dict[str, Any]], delta: Mapping[str, Any]) -> None:
    if isinstance(delta.get("content"), str):
        message["content"] = (message["content"] or "") + delta["content"]
    for part in delta.get("tool_calls") or ():
        call = calls.setdefault(
            int(part.get("index", len(calls))),
            {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
        )
        call["id"] = part.get("id") or call["id"]
        function = part.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""
