"""OpenReward's rollout API, written as plain JSON: the events of one rollout, their batches, and
the bounded post. One implementation for `orlgen eval --upload` (`orlgen.eval.upload`, after a
run) and for training (`orlgen.runtime.ors.uploader`, in the background of a run).

What the `openreward` SDK sends when a harness logs a rollout (`client.rollout.create(...)`,
`rollout.log_openai_completions(message, reward=..., is_finished=...)`, SDK 0.1.167
`api/rollouts`), written here so that neither an eval nor a trainer imports the SDK (2 s, the
LLM vendors' clients) to post a few events; `tests/test_eval_upload.py` checks the shapes against
the SDK's own event classes. Per rollout:

- a `RolloutStartedEvent` (`eventType: "rollout"`): the run name, the rollout's name (eval:
  `env/split/task/sample`; training: see the uploader), environment, split, metadata, and
  `run_info` (`run_type` `eval` or `train`, framework `orlgen` and its version, the model);
- a `RolloutUpdateEvent` carrying `rollout_info` (`task_index`, `duration_ms`, the harness, the
  sampling parameters), as the SDK sends it before the message it is logged with;
- one `LogMessageEvent` per message event, as the SDK normalises an OpenAI chat message: a user
  or assistant text, each tool call (`name`, arguments), each tool result; empty texts are left
  out, as the SDK leaves them. The last one carries the rollout's reward and `isFinished: true`.
  Tool calls and their results are joined by a `callId` (rows keep TRL's format, which has none:
  `call_<message>_<n>`, results matched in order; an OpenAI message's own `id` and
  `tool_call_id` are kept). Content parts (a VLM's images) are sent as
  their text parts, an image as `[image]`.

Posted as the SDK posts them: `POST {api}/v1/rollouts {"events": [...]}` with the key in
`x-api-key`; the started events first, then the rest, in batches of at most 128 events and 1 MB;
an answer 5xx retried 4 times (0.5 s, 1 s, 2 s, 4 s, capped at 30 s), a 4xx not. The API host is
`$OPENREWARD_API_URL`, else `api.` before the host of `$OPENREWARD_URL` (default
`https://openreward.ai`), as the SDK resolves it. Requests go through `bounded_http`: each one
ends at a deadline, and a redirect to another origin is refused, so the key goes to that host
only. Blocking `http.client`, no aiohttp: eval imports no aiohttp at start, and the uploader posts
from its own thread.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import OrlgenRuntimeError
from ..redaction import public_url, redact
from .bounded_http import request

ROUTE = "/v1/rollouts"
DEFAULT_WEB_URL = "https://openreward.ai"
MAX_BATCH_ITEMS = 128
MAX_BATCH_BYTES = 1_000_000
MAX_ANSWER_BYTES = 2**20
# The row keys a rollout's metadata carries (absent or None ones are not sent): an eval's (what
# `eval --upload` has always sent), and what a training rollout's carries beside them.
METADATA_KEYS = ("task_index", "sample", "seed", "model", "outcome", "unscored_reason", "stop", "rewards")
TRAIN_METADATA_KEYS = (*METADATA_KEYS, "global_step", "rank", "index", "tool_calls", "tool_errors")


class RolloutAPIError(OrlgenRuntimeError):
    """No usable rollout API: no key, or an address that is not http(s)."""


class UploadFailed(OrlgenRuntimeError):
    """The rollout API refused a batch or did not answer (one line, the key masked).
    `rollouts_sent`: how many of the posted rollouts had every event sent before it failed."""

    rollouts_sent: int = 0


@dataclass(frozen=True)
class Retry:
    """The SDK's schedule (`SendLoopConfig`): a 5xx answer is retried `attempts` times, after
    `base * factor**n` seconds, at most `cap`."""

    attempts: int = 4
    base: float = 0.5
    factor: float = 2.0
    cap: float = 30.0

    def wait(self, attempt: int) -> float:
        return float(min(self.cap, self.base * self.factor**attempt))


@dataclass(frozen=True)
class Target:
    """Where rollouts go and with which key; the key is sent in `x-api-key` and written nowhere."""

    url: str
    key: str = ""

    def __repr__(self) -> str:
        return f"Target({self.public!r})"

    @property
    def public(self) -> str:
        """The URL as it may be shown: credentials in it (user-info, `?token=`) masked."""
        return public_url(self.url, mask="***")

    @classmethod
    def from_env(cls, needed_by: str) -> Target:
        """The API host as the SDK resolves it, and `$OPENREWARD_API_KEY` (required: without it
        `needed_by`, what asked, is named in the one-line error)."""
        key = os.environ.get("OPENREWARD_API_KEY", "")
        if not key:
            raise RolloutAPIError(f"{needed_by} needs the platform key in OPENREWARD_API_KEY")
        url = os.environ.get("OPENREWARD_API_URL") or _api_host(os.environ.get("OPENREWARD_URL") or DEFAULT_WEB_URL)
        if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
            raise RolloutAPIError(f"{needed_by}: the rollout API address {url!r} is not an http(s) URL")
        return cls(url.rstrip("/"), key)


def _api_host(web: str) -> str:
    parts = urllib.parse.urlsplit(web)
    return urllib.parse.urlunsplit(parts._replace(netloc=f"api.{parts.netloc}"))


def run_info(model: str, version: str, run_type: str = "eval") -> dict[str, Any]:
    """The SDK's `RunInfo` of a run by orlgen (`run_type` `eval` or `train`)."""
    return {"model_name": model, "run_type": run_type, "framework": "orlgen", "framework_version": version}


def events(
    row: dict[str, Any],
    run_name: str,
    info: dict[str, Any],
    sampling: dict[str, Any],
    *,
    name: str | None = None,
    harness: str = "orlgen eval",
    metadata_keys: Sequence[str] = METADATA_KEYS,
    new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    now: Callable[[], int] = lambda: int(time.time() * 1000),
) -> list[dict[str, Any]]:
    """The events of one rollout row, in order: started, update, then its messages. The rollout
    is named `name`, by default `env/split/task_index/sample` (eval's rows are unique by it); its
    metadata holds the row's `metadata_keys` (eval's by default, `TRAIN_METADATA_KEYS` for training)."""
    rollout_id = new_id()
    started = {
        "eventId": rollout_id,
        "timestamp": now(),
        "runName": run_name,
        "environment": row["env"],
        "rolloutName": name or f"{row['env']}/{row['split']}/{row['task_index']}/{row['sample']}",
        "split": row["split"],
        "metadata": {key: row.get(key) for key in metadata_keys},
        "run_info": info,
        "eventType": "rollout",
    }
    rollout_info = {
        "task_index": row["task_index"],
        "duration_ms": int(1000 * (row.get("timings") or {}).get("total_s", 0.0)),
        "harness": harness,
        **sampling,
    }
    update = {"eventId": rollout_id, "timestamp": now(), "rollout_info": rollout_info, "eventType": "rollout_update"}
    messages = _normalized(row.get("messages") or [])
    logged = []
    for index, (kind, content, tool, call_id) in enumerate(messages):
        last = index == len(messages) - 1
        event: dict[str, Any] = {
            "eventId": new_id(),
            "timestamp": now(),
            "index": index,
            "rolloutEventId": rollout_id,
            "type": kind,
            "content": content,
            "name": tool,
            "callId": call_id,
            "reward": row.get("reward") if last else None,
            "isFinished": last,
            "metadata": {},
            "eventType": "message",
        }
        logged.append(_strip_none(event))
    return [_strip_none(started), _strip_none(update), *logged]


def _normalized(messages: list[dict[str, Any]]) -> list[tuple[str, str, str | None, str | None]]:
    """(type, content, name, callId) per event, as the SDK's `openai_completions_to_normalized`
    makes them: an assistant's tool calls, then its text; a tool result; a user or system text."""
    found: list[tuple[str, str, str | None, str | None]] = []
    pending: list[str] = []  # the call ids still waiting for their result, in order
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id") or (pending.pop(0) if pending else None)
            if call_id in pending:
                pending.remove(call_id)
            content = _clean(_text(message.get("content")).strip())
            if content:
                found.append(("tool_result", content, None, call_id))
            continue
        if role == "assistant":
            for j, call in enumerate(message.get("tool_calls") or ()):
                function = call.get("function") or {}
                call_id = call.get("id") or f"call_{i}_{j}"
                pending.append(call_id)
                arguments = function.get("arguments")
                # TRL's rows hold arguments as a dict, OpenAI's as JSON text: sent as JSON text.
                arguments = (
                    json.dumps(arguments, ensure_ascii=False) if isinstance(arguments, dict) else str(arguments or "")
                )
                if function.get("name") and arguments.strip():  # the SDK drops a call it cannot log
                    found.append(("tool_call", _clean(arguments), function.get("name"), call_id))
        text = _clean(_text(message.get("content")).strip())
        if text and role in ("user", "assistant", "system"):
            found.append((f"{role}_message", text, None, None))
    return found


def _text(content: Any) -> str:
    """A message's content as text: content parts as their texts, an image as `[image]`."""
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "") if part.get("type") == "text" else "[image]"
            for part in content
            if isinstance(part, dict)
        )
    return str(content or "")


def _clean(text: str) -> str:
    """The SDK's `_sanitise_content`: no NUL, lone surrogates escaped."""
    return text.replace("\x00", "").encode("utf-8", "backslashreplace").decode("utf-8")


def _strip_none(event: dict[str, Any]) -> dict[str, Any]:
    """The SDK's `_strip_none`: keys whose value is None are not sent, at any depth of dicts."""
    return {
        key: _strip_none(value) if isinstance(value, dict) else value
        for key, value in event.items()
        if value is not None
    }


def encode(event: dict[str, Any]) -> bytes:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def batches(encoded: list[bytes]) -> Iterator[list[bytes]]:
    """Consecutive runs of at most `MAX_BATCH_ITEMS` events and `MAX_BATCH_BYTES` bytes (an event
    larger than that goes alone), as the SDK drains its buffer."""
    batch: list[bytes] = []
    size = 0
    for item in encoded:
        if batch and (len(batch) == MAX_BATCH_ITEMS or size + len(item) > MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item)
    if batch:
        yield batch


def send(
    rollouts: Sequence[list[dict[str, Any]]],
    target: Target,
    *,
    timeout: float = 30.0,
    retry: Retry = Retry(),
    agent: str = "orlgen",
) -> int:
    """Post the events of `rollouts` (each one rollout's `events`), every rollout started before
    any message is logged; the number of events sent. Raises `UploadFailed` (one line, the key
    masked) at the first batch the API refuses (4xx), keeps failing (5xx), or leaves unanswered
    for `timeout` seconds."""
    return send_encoded(
        [[encode(event) for event in rollout] for rollout in rollouts],
        target,
        timeout=timeout,
        retry=retry,
        agent=agent,
    )


def send_encoded(
    rollouts: Sequence[list[bytes]],
    target: Target,
    *,
    timeout: float = 30.0,
    retry: Retry = Retry(),
    agent: str = "orlgen",
) -> int:
    """`send`, of rollouts whose events are already encoded (`encode`): a caller that encodes
    each rollout first finds one that cannot be encoded before anything is posted. An
    `UploadFailed` says in `rollouts_sent` how many rollouts (the first ones) were wholly sent."""
    started = [first for first, *_ in rollouts]
    rest = [event for _, *others in rollouts for event in others]
    # Messages go after every started event, in rollout order: rollout i is wholly sent once
    # all started events and the first ends[i] of the rest are.
    ends = list(itertools.accumulate(len(others) for _, *others in rollouts))
    sent = 0
    for batch in [*batches(started), *batches(rest)]:
        try:
            _post(batch, target, timeout, retry, agent)
        except UploadFailed as exc:
            total = len(started) + len(rest)
            failed = UploadFailed(redact(f"{exc} ({sent} of {total} events were sent)", [target.key]))
            failed.rollouts_sent = sum(1 for end in ends if end <= sent - len(started))
            raise failed from exc
        sent += len(batch)
    return sent


def _post(batch: list[bytes], target: Target, timeout: float, retry: Retry, agent: str) -> None:
    body = b'{"events":[' + b",".join(batch) + b"]}"
    headers = {"Content-Type": "application/json", "x-api-key": target.key, "User-Agent": agent}
    for attempt in range(retry.attempts + 1):
        try:
            answer = request(
                target.url + ROUTE, "POST", headers, body, deadline=time.monotonic() + timeout, limit=MAX_ANSWER_BYTES
            )
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise UploadFailed(f"upload to {target.public}{ROUTE} failed: {type(exc).__name__}: {exc}") from exc
        if answer.status < 400:
            return
        said = answer.body[:200].decode("utf-8", "replace").replace("\n", " ")
        if answer.status < 500 or attempt == retry.attempts:
            tries = f" after {attempt + 1} attempts" if attempt else ""
            raise UploadFailed(f"upload to {target.public}{ROUTE} failed{tries}: HTTP {answer.status}: {said}")
        time.sleep(retry.wait(attempt))
