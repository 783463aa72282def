"""The model under evaluation, behind one small interface, and the OpenAI-compatible client.

A policy starts one conversation per rollout; each turn takes the conversation so far (TRL's
conversational format: tool-call arguments are dicts) and the adapter's tool methods, and returns
the next assistant message in the same format. The tools a model is shown are exactly what TRL
shows it: the public functions of the adapter's class, read by `transformers.utils.get_json_schema`,
keyed by `__name__`.
"""

from __future__ import annotations

import base64
import inspect
import io
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from .errors import Unreachable

SPECIAL_METHODS = ("reset", "get_reward")  # what both TRL trainers never show as tools


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


def tool_methods(env: Any) -> list[Callable[..., Any]]:
    """The adapter's tools as TRL lists them (`inspect.getmembers` of the class, functions only,
    `reset`/`get_reward`/private names left out), bound to this rollout's adapter."""
    return [
        getattr(env, name)
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in SPECIAL_METHODS and not name.startswith("_")
    ]


def tool_schemas(tools: list[Callable[..., Any]]) -> list[dict[str, Any]]:
    """The JSON schemas the model sees: `get_json_schema` of each method, as TRL's chat
    template rendering reads them. They depend only on the adapter class: read once per class."""
    key = (tuple(type(getattr(tool, "__self__", None)) for tool in tools[:1]), tuple(t.__name__ for t in tools))
    with _schemas_lock:
        if key not in _schemas:
            from transformers.utils import get_json_schema

            _schemas[key] = [get_json_schema(tool) for tool in tools]
        return _schemas[key]


_schemas: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
_schemas_lock = threading.Lock()


class ChatEndpoint:
    """Any OpenAI-compatible `POST {base_url}/chat/completions` with tool calling (vLLM's server,
    `trl vllm-serve`, a hosted API). Tool calls come back in `message.tool_calls`."""

    RETRIES = 3  # on 429 and 5xx answers, with back-off

    def __init__(
        self, base_url: str, model: str, *, api_key: str | None = None, max_tokens: int = 512, timeout: float = 300.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.timeout = timeout

    @classmethod
    def from_env(cls, base_url: str, model: str, api_key_env: str | None, **options: Any) -> ChatEndpoint:
        return cls(base_url, model, api_key=os.environ.get(api_key_env) if api_key_env else None, **options)

    def check(self) -> None:
        """Reachable means any HTTP answer from `GET /models` (a server without that route is
        still up); a refused connection or no answer is not."""
        try:
            self._request("GET", "/models", None, timeout=10.0)
        except urllib.error.HTTPError:
            return
        except (OSError, ValueError) as exc:
            raise Unreachable(f"model endpoint {self.base_url} cannot be reached: {_reason(exc)}") from exc

    def start(self) -> ChatEndpoint:
        """The endpoint keeps no state between turns: the whole conversation goes with each."""
        return self

    def turn(
        self, messages: list[dict[str, Any]], tools: list[Callable[..., Any]], *, seed: int, temperature: float
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(message) for message in messages],
            "temperature": temperature,
            "seed": seed,
            "max_tokens": self.max_tokens,
        }
        schemas = tool_schemas(tools)
        if schemas:
            body["tools"] = schemas
        answer = self._post_with_retries(body)
        try:
            message = answer["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise PolicyError(f"the endpoint's answer has no choices[0].message: {str(answer)[:200]}") from exc
        return trl_message(message)

    def _post_with_retries(self, body: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(self.RETRIES + 1):
            try:
                return self._request("POST", "/chat/completions", body, timeout=self.timeout)
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode(errors="replace")
                if exc.code not in (429, 500, 502, 503, 504) or attempt == self.RETRIES:
                    raise PolicyError(f"the endpoint answered HTTP {exc.code}: {detail}") from exc
            except (OSError, ValueError) as exc:
                if attempt == self.RETRIES:
                    raise PolicyError(f"the endpoint failed: {_reason(exc)}") from exc
            time.sleep(0.5 * 2**attempt)
        raise AssertionError("unreachable")

    def _request(self, method: str, path: str, body: dict[str, Any] | None, timeout: float) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())


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
            buffer = io.BytesIO()
            part["image"].save(buffer, format="PNG")
            url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
            parts.append({"type": "image_url", "image_url": {"url": url}})
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


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return f"{type(reason).__name__}: {reason}".splitlines()[0] if isinstance(reason, BaseException) else str(reason)
