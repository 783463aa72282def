"""Hermes/Qwen tool calls as text: the `<tool_call>` blocks a model writes, and the
`<tool_response>` answers it reads back.

For a trainer with no tool-schema channel (skyrl-gym): the model is shown the tools in its
prompt and writes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, as Qwen's chat
template teaches. A `Tool` maps the name the model calls to the ORS wire name and params model,
and refuses an argument the tool does not take before anything is sent (pydantic would drop it).
No trainer's package is imported here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from . import content as _content
from .ors.blocks import quoted

ImageMode = Literal["markers", "parts"]
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
# The tool calls one model turn may run (skyrl's `max_tool_calls`, `orlgen eval --max-tool-calls`):
# a turn of thousands of calls is a model gone wrong, and each would be a request.
MAX_TOOL_CALLS_PER_TURN = 64
# JSON levels a tool call may nest (the call object and its arguments included). Python's json
# reader stops near its recursion limit; what it reads may still be too deep for the validator
# and request encoder further down the stack, so a deeper call is refused here, before them.
MAX_CALL_DEPTH = 100


@dataclass(frozen=True)
class Tool:
    """One ORS tool as the model calls it: its wire name, its params model (None: no
    parameters), and `aliases` {wire name: the parameter name the model is shown} for
    parameters Python had to rename. The model may use either name."""

    wire: str
    params: type[BaseModel] | None = None
    aliases: Mapping[str, str] = field(default_factory=dict)

    def wire_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any] | str:
        """The arguments keyed by wire name, or one line naming an argument the tool does not take."""
        shown = {name: wire for wire, name in self.aliases.items()}
        known = set(shown) | _wire_names(self.params)
        unknown = sorted(key for key in arguments if key not in known)
        if unknown:
            expected = ", ".join(sorted(set(self.aliases.values()) | (_wire_names(self.params) - set(self.aliases))))
            return f"unknown argument {quoted(unknown[0])} (this tool takes: {expected or 'no arguments'})"
        return {shown.get(key, key): value for key, value in arguments.items()}


def _wire_names(params: type[BaseModel] | None) -> set[str]:
    if params is None:
        return set()
    return {info.alias or name for name, info in params.model_fields.items()}


@dataclass(frozen=True)
class Call:
    """A parsed `<tool_call>` block."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class BadCall:
    """A `<tool_call>` block that is no call: why, in one line."""

    problem: str


def parse_tool_calls(text: str) -> list[Call | BadCall]:
    """Every `<tool_call>` block of the model's text, in order (Hermes/Qwen: a JSON object with
    `name` and `arguments`). A last block without its end tag is read to the end of the text: a
    generation stopped at the `</tool_call>` stop string does not include it."""
    return [_parse_block(body) for body in _BLOCK.findall(text)]


def _parse_block(body: str) -> Call | BadCall:
    """One block as a call, or why it is none: whatever the model wrote, nothing raises."""
    too_deep = BadCall(f"the tool call is nested deeper than {MAX_CALL_DEPTH} levels")
    try:
        call = json.loads(body)
    except RecursionError:
        return too_deep
    except ValueError as exc:
        return BadCall(f"the tool call is not JSON ({exc})")
    if _deeper_than(call, MAX_CALL_DEPTH):
        return too_deep
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return BadCall('the tool call must be a JSON object {"name": ..., "arguments": {...}}')
    return _as_call(call["name"], call.get("arguments", {}))


def parsed_call(name: str, arguments: Any) -> Call | BadCall:
    """An OpenAI-style call (`function.name`, `function.arguments`: JSON text, or the object a
    client already parsed) as a call, or why it is none: the same rules as a `<tool_call>`
    block's, depth included. Nothing raises."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except RecursionError:
            return BadCall(f"the tool call is nested deeper than {MAX_CALL_DEPTH} levels")
        except ValueError as exc:
            return BadCall(f"the arguments of {quoted(name)} are not JSON ({exc})")
        if _deeper_than(arguments, MAX_CALL_DEPTH - 1):
            return BadCall(f"the tool call is nested deeper than {MAX_CALL_DEPTH} levels")
    return _as_call(name, arguments)


def _as_call(name: str, arguments: Any) -> Call | BadCall:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return BadCall(f"the arguments of {quoted(name)} must be a JSON object, not {type(arguments).__name__}")
    return Call(name, arguments)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests more than `limit` containers deep (iterative: the value
    may be nested as deep as the reader allowed)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return False


def tool_response(results: Sequence[str | list[dict[str, Any]]], images: ImageMode) -> dict[str, Any]:
    """One user message answering a turn's calls: a `<tool_response>` block per call, in order
    (as Qwen's chat template lays out tool messages). With `images="parts"` an answer's images
    are OpenAI `image_url` parts (SkyRL's VLM generator), else markers in the text."""
    parts: list[dict[str, Any]] = []
    for result in results:
        parts.append({"type": "text", "text": "<tool_response>\n"})
        parts.extend(content_parts(result, images))
        parts.append({"type": "text", "text": "\n</tool_response>"})
    return {"role": "user", "content": joined(parts)}


def content_parts(result: str | list[dict[str, Any]], images: ImageMode) -> list[dict[str, Any]]:
    """An Episode answer (text, or content parts holding PIL images) as OpenAI content parts."""
    if isinstance(result, str) or images == "markers":
        return [{"type": "text", "text": _content.as_text(result)}]
    out: list[dict[str, Any]] = []
    for index, part in enumerate(result):
        if part["type"] == "image":
            out.append({"type": "image_url", "image_url": {"url": _content.data_url(_content.png(part["image"]))}})
        else:
            out.append({"type": "text", "text": part["text"] + ("\n" if index + 1 < len(result) else "")})
    return out


def joined(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Content parts with adjacent text merged; a plain string when only text is left."""
    merged: list[dict[str, Any]] = []
    for part in parts:
        if part["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = {"type": "text", "text": merged[-1]["text"] + part["text"]}
        else:
            merged.append(dict(part))
    if all(part["type"] == "text" for part in merged):
        return "".join(part["text"] for part in merged)
    return merged
