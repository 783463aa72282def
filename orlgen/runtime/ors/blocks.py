"""Server answers → validated values: the one place where the runtime decides what the wire may say.

The SDK's client does not check what a server sends: its `ToolOutput` and blocks are plain
dataclasses filled from JSON, so a reward can arrive as `[1.0]`, `"abc"` or `1e39`, `finished`
as `"false"`, a text block's text as an int. Passed on, such values raise deep inside a reward
function (where TRL does not catch them, and training dies) or, worse, are accepted: one
infinite reward zeroes a GRPO group's advantages, a NaN is counted as scored. So every value a
server sends is checked here, once, as the session reads it (`ors.session.Session` returns a
`Step` and a prompt's blocks validated), against what the protocol allows; anything else is a
`WireError`, which the core (`Episode`) turns into an environment error (the rollout ends
unscored). The layers above validate nothing again.

What the protocol allows (`openreward.environments.types`): a reward is a finite number (not a
bool) or null, and we also require it to fit a float32, the widest dtype a trainer is likely to
put it in; `finished` is a bool; metadata is an object or null; a tool output's and a prompt's
blocks are a list of text blocks (`text` a str) and image blocks (`data` and `mimeType` strs).
Turning image blocks into what a model sees is `content`'s job; here only their shape is checked.

Tool output text reaches the model whole, so its size is bounded too (`cut`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ..errors import OrlgenRuntimeError

FLOAT32_MAX = 3.4028234663852886e38
VALUE_CHARS = 80  # a bad value is quoted in messages cut to this many characters
MAX_OUTPUT_CHARS = 100_000  # default bound on one tool output's text; ORLGEN_MAX_OUTPUT_CHARS changes it


class WireError(OrlgenRuntimeError):
    """A server sent a value the protocol does not allow; the message names the field and the value."""


@dataclass(frozen=True)
class Step:
    """One tool call's answer, validated: what a session returns and the core records."""

    blocks: tuple[Block, ...]  # text and image blocks, shapes checked (`content` renders them)
    reward: float | None
    finished: bool
    metadata: dict[str, Any] | None


def quoted(value: Any) -> str:
    """`repr(value)`, cut short: a hostile value can be megabytes."""
    try:
        text = repr(value)
    except Exception:  # a value whose repr raises is still named by its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def reward(value: Any) -> float | None:
    """A reward as a float, or None; anything else is a WireError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WireError(f"reward {quoted(value)} is not a number")
    if not abs(value) <= FLOAT32_MAX:  # NaN compares false: refused with infinities and 1e39
        raise WireError(f"reward {quoted(value)} is not a finite number within float32 range")
    return float(value)


def finished(value: Any) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"finished {quoted(value)} is not a bool")
    return value


def metadata(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise WireError(f"metadata {quoted(value)} is not an object")
    return dict(value)


def parsed(raw: Any) -> Any:
    """Wire blocks (JSON) as `Block`s, nested `blocks` too, unchecked: a conversation's messages
    may hold any kind (reasoning, tool calls), which `content` renders as text. A value that is
    not a list stays as it is."""
    if not isinstance(raw, list):
        return raw
    return [_block(block) for block in raw]


class Block(SimpleNamespace):
    """A wire block: its fields as attributes, shown as `TextBlock(text=...)` in messages."""

    def __repr__(self) -> str:
        fields = dict(vars(self))
        kind = fields.pop("type", None)
        name = "".join(part.capitalize() for part in str(kind).split("_")) if isinstance(kind, str) else ""
        return f"{name}Block({', '.join(f'{key}={value!r}' for key, value in fields.items())})"


def _block(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw
    fields = dict(raw)
    if isinstance(fields.get("blocks"), list):
        fields["blocks"] = parsed(fields["blocks"])
    return Block(**fields)


def blocks(value: Any) -> tuple[Block, ...]:
    """The blocks of a tool output or prompt as the server sent them (JSON), as `Block`s, each a
    text block or an image block of the right shape."""
    if not isinstance(value, list):
        raise WireError(f"blocks {quoted(value)} is not a list")
    converted = parsed(value)
    for block in converted:
        kind = getattr(block, "type", None)
        if kind == "text":
            if not isinstance(getattr(block, "text", None), str):
                raise WireError(f"a text block's text {quoted(getattr(block, 'text', None))} is not a string")
        elif kind == "image":
            for field in ("data", "mimeType"):
                if not isinstance(getattr(block, field, None), str):
                    raise WireError(f"an image block's {field} {quoted(getattr(block, field, None))} is not a string")
        else:
            raise WireError(f"block {quoted(block)} is neither a text nor an image block")
    return tuple(converted)


def tool_output(output: Any) -> Step:
    """A tool call's `output` as the server sent it (JSON), validated; an output that is not an
    object has every field missing, and the first is named."""
    fields: Mapping[str, Any] = output if isinstance(output, Mapping) else {}
    return Step(
        blocks=blocks(fields.get("blocks")),
        reward=reward(fields.get("reward")),
        finished=finished(fields.get("finished")),
        metadata=metadata(fields.get("metadata")),
    )


def cut(value: str, max_chars: int) -> str:
    """`value`, or its first `max_chars` characters and a marker saying how much was cut."""
    if len(value) <= max_chars:
        return value
    return f"{value[:max_chars]}\n[output cut: {len(value) - max_chars} more characters (max_output_chars={max_chars})]"


def max_output_chars(given: int | None) -> int:
    """The tool output bound: `given`, else `ORLGEN_MAX_OUTPUT_CHARS`, else the default."""
    raw: Any = given if given is not None else os.environ.get("ORLGEN_MAX_OUTPUT_CHARS", MAX_OUTPUT_CHARS)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = 0
    if isinstance(raw, bool) or value <= 0:
        source = "max_output_chars" if given is not None else "ORLGEN_MAX_OUTPUT_CHARS"
        raise ValueError(f"{source}={raw!r} is not a positive integer")
    return value
