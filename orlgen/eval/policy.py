"""The model under evaluation, behind one small interface, and the OpenAI-compatible client.

A policy starts one conversation per rollout; each turn takes the conversation so far (TRL's
conversational format: tool-call arguments are dicts) and the adapter's tool methods, and returns
the next assistant message in the same format. The tools a model is shown are exactly what TRL
shows it: the public functions of the adapter's class, read by transformers' `get_json_schema`
(loaded as `plan.json_schema` loads it, without torch), keyed by `__name__`.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from typing import Any, Protocol

from orlgen.runtime.content import data_url, png

from ..plan.json_schema import json_schema_reader
from ..runtime.agent.endpoint import MAX_ANSWER_BYTES, Endpoint, EndpointError
from .cache import Cache
from .errors import Unreachable


class PolicyError(RuntimeError):
    """One model turn failed (an HTTP error, a malformed answer): that rollout ends, unscored."""


class Chat(Protocol):
    """One rollout's conversation with the model."""

    def turn(
        self, messages: list[dict[str, Any]], tools: list[Callable[..., Any]], *, seed: int, temperature: float
    ) -> dict[str, Any]:
        """The next assistant message, given the whole conversation so far."""


class Policy(Protocol):
    def check(self) -> None:
        """Raise `Unreachable` when no turn can possibly succeed."""

    def start(self) -> Chat:
        """A conversation for one rollout (a local model keeps its token ids there, as TRL does)."""

    def halt(self) -> None:
        """On Ctrl-C: stop whatever must not be running when the interpreter exits, and return
        once it has stopped (a local model's generation; an endpoint's requests need nothing)."""


def tool_schemas(tools: list[Callable[..., Any]]) -> list[dict[str, Any]]:
    """The JSON schemas the model sees: `get_json_schema` of each method, as TRL's chat
    template rendering reads them. transformers' function is loaded without importing
    transformers or torch (`plan.json_schema`: 5-10 s of an eval's start-up otherwise). They
    depend only on the adapter class: read once per class."""
    key = (tuple(type(getattr(tool, "__self__", None)) for tool in tools[:1]), tuple(t.__name__ for t in tools))
    with _schemas_lock:
        if key not in _schemas:
            get_json_schema = json_schema_reader()
            if get_json_schema is None:
                raise ImportError("orlgen eval shows the model TRL's tool schemas: install transformers")
            _schemas[key] = [get_json_schema(tool) for tool in tools]
        return _schemas[key]


_schemas: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
_schemas_lock = threading.Lock()


class ChatEndpoint:
    """Any OpenAI-compatible `POST {base_url}/chat/completions` with tool calling (vLLM's server,
    `trl vllm-serve`, a hosted API). Tool calls come back in `message.tool_calls`.

    The endpoint is treated as untrusted, like an ORS server, by the agent loop's own client
    (`orlgen.runtime.agent.endpoint`): the key goes to its origin only, a turn ends at
    `turn_timeout` seconds whatever the endpoint does (retries included), and an answer is read
    up to `max_answer_bytes`. It plays TRL's loop (`turn`, TRL's message format) and the agent
    loop (`complete`, OpenAI's), through one cache of answers."""

    CHECK_TIMEOUT = 10.0

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        max_tokens: int = 512,
        turn_timeout: float = 300.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        cache: Cache | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.cache = cache
        self.model = model
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.turn_timeout = turn_timeout
        self.endpoint = Endpoint(
            base_url,
            api_key=api_key,
            turn_timeout=turn_timeout,
            max_answer_bytes=max_answer_bytes,
            timeout_name="--turn-timeout",
        )

    @classmethod
    def from_env(cls, base_url: str, model: str, api_key_env: str | None, **options: Any) -> ChatEndpoint:
        return cls(base_url, model, api_key=os.environ.get(api_key_env) if api_key_env else None, **options)

    def check(self) -> None:
        """Reachable means any HTTP answer from `GET /models` (a server without that route is
        still up); a refused connection, no answer or a refused redirect is not."""
        try:
            asyncio.run(self.endpoint.reachable(min(self.CHECK_TIMEOUT, self.turn_timeout)))
        except EndpointError as exc:
            raise Unreachable(f"model endpoint {self.base_url} cannot be reached: {exc}") from exc

    def start(self) -> ChatEndpoint:
        """The endpoint keeps no state between turns: the whole conversation goes with each."""
        return self

    def halt(self) -> None:
        """Nothing to stop: a request in flight runs no native thread, and ends with the process."""

    def turn(
        self, messages: list[dict[str, Any]], tools: list[Callable[..., Any]], *, seed: int, temperature: float
    ) -> dict[str, Any]:
        """TRL's loop: the next assistant message in TRL's format, shown the adapter's methods."""
        wire = [wire_message(message) for message in messages]
        choice = asyncio.run(self.complete(wire, tool_schemas(tools), seed=seed, temperature=temperature))
        return trl_message(choice["message"])

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int, temperature: float
    ) -> dict[str, Any]:
        """The agent loop: the endpoint's choice for an OpenAI-format conversation and tools."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "seed": seed,
            "max_tokens": self.max_tokens,
        }
        if tools:
            body["tools"] = tools
        request = {"endpoint": self.base_url, "body": body}  # what decides the answer (never the key)
        cached = None if self.cache is None else self.cache.get(request)
        if cached is not None:
            return {"message": cached}
        try:
            choice = await self.endpoint.complete(body)
        except EndpointError as exc:
            raise PolicyError(str(exc)) from exc
        if self.cache is not None:
            self.cache.put(request, choice["message"])
        return choice


def wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """A TRL message as the OpenAI API takes it: tool-call arguments as JSON text, tool results
    answering a `tool_call_id`."""
    out: dict[str, Any] = {"role": message["role"], "content": wire_content(message.get("content"))}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": call.get("id") or f"call_{i}",
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": arguments_text(call)},
            }
            for i, call in enumerate(message["tool_calls"])
        ]
    if message["role"] == "tool":
        out["tool_call_id"] = message.get("tool_call_id") or ""
    return out


def wire_content(content: Any) -> Any:
    """Text as text; TRL's content parts as OpenAI's: `text` parts, and each image (a PIL image,
    as the runtime hands them to TRL) as an `image_url` part holding a PNG data URL."""
    if not isinstance(content, list):
        return content or ""
    parts = []
    for part in content:
        if part.get("type") == "image" and hasattr(part.get("image"), "save"):
            parts.append({"type": "image_url", "image_url": {"url": data_url(png(part["image"]))}})
        else:
            parts.append({"type": "text", "text": str(part.get("text", ""))})
    return parts


def trl_message(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI assistant message in TRL's form: arguments parsed to a dict (kept as text when
    they are not a JSON object: the rollout then answers the call with an error, as TRL does)."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                pass
        entry = {
            "type": call.get("type", "function"),
            "function": {"name": function.get("name", ""), "arguments": arguments},
        }
        if call.get("id"):
            entry["id"] = call["id"]
        calls.append(entry)
    if calls:
        out["tool_calls"] = calls
    return out


def arguments_text(call: dict[str, Any]) -> str:
    arguments = call["function"].get("arguments")
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
