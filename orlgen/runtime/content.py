"""What an environment's blocks (a prompt, a tool output, a message) become for TRL.

ORS answers with a list of blocks: `TextBlock(text)` and `ImageBlock(data=<base64>, mimeType)`,
in the author's order. TRL's two trainers take different shapes:

- `GRPOTrainer` accepts a `str`, or a list of content parts
  `[{"type": "image", "image": <PIL.Image.Image>}, {"type": "text", "text": ...}]`; it collects the
  `image` values and hands them to the processor of a vision-language model (trl 1.16
  `_tool_call_loop` and `_tokenize_prompts`; transformers' image processors take PIL images).
  So images are decoded here, once, to `PIL.Image.Image`.
- `AsyncGRPOTrainer`'s rollout worker turns every tool result into `str(result)` and renders
  prompts for a text-only completions endpoint, so there an image becomes a short readable marker
  (`[image: image/png, 56x56, 213 bytes]`), and the first one is logged.

Blocks that are all text stay a `str`, joined by newlines: that is TRL's contract for a tool
result, and what every text-only environment returned before images were kept.

What a server sends is bounded before the model sees it:
- images, per answer (a prompt or one tool output): at most `ORLGEN_MAX_IMAGES` (default 16)
  decoded, and at most `ORLGEN_MAX_IMAGE_PIXELS` decoded pixels in all (default 40,000,000, about
  160 MB as RGBA). An image's size is read from its header (`Image.open`) before any pixel is
  decoded (`load()`); one over either limit becomes a one-line marker saying so, and is counted
  (`images_refused` in the runtime's metrics). Eight 9000x9000 PNGs took an adapter to 3 GB.
- text: terminal control characters (ESC, the other C0 and C1 controls but tab and newline, DEL)
  and bidi controls (U+202E and the other `Bidi_Control` characters) are written as escapes
  (`\\x1b[2J`, `\\u202e`), so what the model reads, and what a log shows, is what the server
  sent, never an instruction to a terminal nor text shown in another order. A CRLF line end is
  one newline.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import multiprocessing
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .errors import OrlgenRuntimeError
from .log import log_once
from .session.metrics import COUNTERS

logger = logging.getLogger("orlgen")

# The name trl 1.16's AsyncRolloutWorker gives the process it spawns to run every environment.
ASYNC_WORKER_PROCESS = "grpo-rollout-worker-child"

Parts = list[dict[str, Any]]


@dataclass(frozen=True)
class ImageLimits:
    """How many images, and how many decoded pixels in all, one answer may bring the model."""

    images: int = 16
    pixels: int = 40_000_000

    @classmethod
    def from_environment(cls) -> ImageLimits:
        """The defaults, or `ORLGEN_MAX_IMAGES` and `ORLGEN_MAX_IMAGE_PIXELS` where set."""
        return cls(
            images=_limit("ORLGEN_MAX_IMAGES", cls.images),
            pixels=_limit("ORLGEN_MAX_IMAGE_PIXELS", cls.pixels),
        )


def _limit(variable: str, default: int) -> int:
    value = os.environ.get(variable)
    if value is None:
        return default
    if not value.strip().isdigit():
        raise OrlgenRuntimeError(f"{variable}={value[:40]!r}: not a whole number ≥ 0")
    return int(value)


class _Budget:
    """What is left of one answer's `ImageLimits` as its images are decoded."""

    def __init__(self, limits: ImageLimits) -> None:
        self.limits, self.images, self.pixels = limits, 0, 0

    def refusal(self, size: tuple[int, int]) -> str | None:
        """Why an image of `size` may not be decoded now, or None (and it is counted)."""
        if self.images >= self.limits.images:
            return f"over the limit of {self.limits.images} images per answer"
        if self.pixels + size[0] * size[1] > self.limits.pixels:
            return f"over the limit of {self.limits.pixels:,} decoded pixels per answer"
        self.images, self.pixels = self.images + 1, self.pixels + size[0] * size[1]
        return None


def strings_only() -> bool:
    """True inside TRL's async rollout worker, which can carry text only, or when
    `ORLGEN_IMAGES=markers` asks for markers (a text-only model under GRPOTrainer)."""
    return (
        multiprocessing.current_process().name == ASYNC_WORKER_PROCESS or os.environ.get("ORLGEN_IMAGES") == "markers"
    )


def render(
    blocks: Iterable[Any] | None, *, parts: bool | None = None, limits: ImageLimits | None = None
) -> str | Parts:
    """`blocks` for TRL: a `str` when they are all text (or `parts` is False, or the caller is
    TRL's async worker), else content parts with each image decoded within `limits` (default:
    `ImageLimits.from_environment()`), in the blocks' order."""
    blocks = list(blocks or ())
    if parts is None:
        parts = not strings_only()
    if not parts or not any(_kind(block) == "image" for block in blocks):
        return text(blocks)
    budget = _Budget(limits or ImageLimits.from_environment())
    rendered: Parts = []
    for block in blocks:
        if _kind(block) == "image":
            rendered.append(_image_part(block, budget))
            continue
        piece = _block_text(block)
        if piece:
            rendered.append({"type": "text", "text": piece})
    return rendered


def conversation(
    messages: Iterable[Any], carried: Any = None, *, parts: bool | None = None, limits: ImageLimits | None = None
) -> str | Parts:
    """A conversation-shaped prompt (ORS `get_messages`) as the content `reset` returns.

    TRL appends what `reset` returns to the last user turn of the row's `prompt`; it cannot insert
    a message. So the messages the row already carries with their roles (a system message that
    `build_dataset` put in the `prompt` column) are skipped when they match, in order; a lone
    user message left over is its blocks; anything else keeps its role as a `[role]` line before
    its blocks (the same rendering as the server's flattened `/prompt`), so no system prompt or
    earlier turn is lost."""
    rest = _after_carried(list(messages), carried)
    if len(rest) == 1 and rest[0].role == "user":
        return render(rest[0].blocks, parts=parts, limits=limits)
    blocks: list[Any] = []
    for message in rest:
        blocks.append({"type": "text", "text": f"[{message.role}]"})
        blocks.extend(_flat(block) for block in message.blocks)
    return render(blocks, parts=parts, limits=limits)


def _after_carried(messages: list[Any], carried: Any) -> list[Any]:
    """`messages` without the leading ones that the row's prompt holds (same role, same text)."""
    held = [
        (turn.get("role"), turn.get("content"))
        for turn in carried or ()
        if isinstance(turn, dict) and isinstance(turn.get("content"), str) and turn.get("content")
    ]
    skip = 0
    while skip < min(len(held), len(messages)):
        message = messages[skip]
        if any(_kind(block) not in ("text", None) for block in message.blocks):
            break
        if (message.role, "\n".join(_block_text(block) for block in message.blocks)) != held[skip]:
            break
        skip += 1
    return messages[skip:]


def _flat(block: Any) -> Any:
    """A message block the prompt can show: text and images as they are, reasoning, tool calls
    and tool results as text (as the SDK's own `flatten_messages` renders them)."""
    kind = _kind(block)
    if kind in ("text", "image"):
        return block
    if kind == "reasoning":
        return {"type": "text", "text": f"<think>{_block_text(block)}</think>"}
    if kind == "tool_call":
        arguments = json.dumps(getattr(block, "input", {}), sort_keys=True, default=str)
        return {"type": "text", "text": f"[tool_call {getattr(block, 'name', '?')}] {arguments}"}
    if kind == "tool_result":
        inner = text(getattr(block, "blocks", ()))
        return {"type": "text", "text": f"[tool_result]\n{inner}"}
    return {"type": "text", "text": _block_text(block)}


def text(blocks: Iterable[Any] | None) -> str:
    """The blocks as one string: text as written, each image as a marker (logged once)."""
    pieces = []
    for block in blocks or ():
        if _kind(block) == "image":
            pieces.append(image_marker(block))
            log_once("image", f"an image reached a text-only consumer and was shown as {pieces[-1]}")
        else:
            piece = _block_text(block)
            if piece:
                pieces.append(piece)
    return "\n".join(pieces)


def as_text(content: str | Parts) -> str:
    """Content parts (or a string) as the text a person reads in `last_output` and logs."""
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] if part["type"] == "text" else _pil_marker(part["image"]) for part in content)


def image_marker(block: Any, note: str = "") -> str:
    """`[image: image/png, 56x56, 213 bytes]`: what the model reads where it cannot see (with
    `note`, why it is not shown: `[image: image/png, 9000x9000, 1 bytes, not shown: over ...]`)."""
    data = _image_bytes(block)
    mime = "".join(c for c in str(_field(block, "mimeType") or "image")[:64] if c.isprintable())
    if data is None:
        return f"[image: {mime}, undecodable]"
    size = _dimensions(data)
    return f"[image: {mime}, {size + ', ' if size else ''}{len(data)} bytes{', not shown: ' + note if note else ''}]"


def _image_part(block: Any, budget: _Budget) -> dict[str, Any]:
    """The block as an image part, or as a text part holding its marker when it cannot be read
    or is over the answer's limits (counted, and logged once)."""
    image = decode_image(block, budget)
    if isinstance(image, str):
        COUNTERS.add("images_refused")
        log_once("limit", f"an image over the answer's limits was shown as a marker ({image})")
        return {"type": "text", "text": image_marker(block, image)}
    return {"type": "image", "image": image} if image is not None else {"type": "text", "text": image_marker(block)}


def decode_image(block: Any, budget: _Budget | None = None) -> Any:
    """The block's image as a `PIL.Image.Image`; None when Pillow or the data cannot make one
    (the reason is logged once); or, with a `budget`, the reason it would overdraw it (a `str`),
    found from the image's header before a pixel is decoded."""
    data = _image_bytes(block)
    if data is None:
        log_once("undecodable", f"an image block is not base64 and was shown as {image_marker(block)}")
        return None
    try:
        from PIL import Image
    except ImportError:
        log_once("pillow", "images are shown as markers: install Pillow to pass them to a vision model")
        return None
    try:
        image = Image.open(io.BytesIO(data))
        refused = budget.refusal(image.size) if budget is not None else None
        if refused is not None:
            return refused
        image.load()
    except Exception as exc:  # Pillow raises several unrelated types for bad data
        log_once("unreadable", f"an image block could not be read ({type(exc).__name__}); shown as a marker")
        return None
    return image


def png(image: Any) -> bytes:
    """A decoded image (a PIL image, as `decode_image` makes) as PNG bytes: the one encoding every
    consumer that needs the image back as data uses (an OpenAI `image_url` part, MCP image
    content, the eval's rows), whatever format the server sent."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def data_url(png_bytes: bytes) -> str:
    """PNG bytes as a `data:image/png;base64,...` URL (OpenAI's `image_url` and SkyRL's VLM
    generator read it; a page shows it)."""
    return "data:image/png;base64," + base64.b64encode(png_bytes).decode("ascii")


def _field(block: Any, name: str) -> Any:
    """A block's field, whether the SDK parsed it (a dataclass) or it is still JSON (a dict)."""
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def _kind(block: Any) -> str | None:
    kind = _field(block, "type")
    return kind if isinstance(kind, str) else None


def _block_text(block: Any) -> str:
    value = _field(block, "text")
    return terminal_safe(value) if isinstance(value, str) else ""


# C0 controls but tab and newline, DEL, the C1 controls (U+0080-U+009F: CSI, OSC, NEL, ...), and
# Unicode's Bidi_Control characters (U+202E RIGHT-TO-LEFT OVERRIDE and its kin), which reorder
# what a reader sees: a line shown as one instruction can hold another.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with every terminal control character and bidi control written as its escape
    (`\\x1b`, `\\u202e`), a CRLF line end as a newline: a server's text cannot clear a screen,
    move a cursor, reorder or hide a line from whoever reads the model's transcript or a log, and
    the model reads what was sent."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_escape, text.replace("\r\n", "\n"))


def _escape(found: re.Match[str]) -> str:
    """A control character as Python writes it in a string literal: `\\x1b`, `\\u202e`."""
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _image_bytes(block: Any) -> bytes | None:
    data = _field(block, "data")
    if not isinstance(data, str):
        return None
    if data.startswith("data:"):  # a data URL: `data:image/png;base64,...`
        data = data.partition(",")[2]
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _dimensions(data: bytes) -> str:
    """`WxH` read from a PNG, GIF or JPEG header without decoding, else ''."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return f"{int.from_bytes(data[16:20], 'big')}x{int.from_bytes(data[20:24], 'big')}"
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return f"{int.from_bytes(data[6:8], 'little')}x{int.from_bytes(data[8:10], 'little')}"
    if data[:2] == b"\xff\xd8":
        return _jpeg_dimensions(data)
    return ""


def _jpeg_dimensions(data: bytes) -> str:
    at = 2
    while at + 9 <= len(data) and data[at] == 0xFF:
        marker, length = data[at + 1], int.from_bytes(data[at + 2 : at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return f"{int.from_bytes(data[at + 7 : at + 9], 'big')}x{int.from_bytes(data[at + 5 : at + 7], 'big')}"
        at += 2 + length
    return ""


def _pil_marker(image: Any) -> str:
    size = getattr(image, "size", None)
    fmt = getattr(image, "format", None)
    mime = f"image/{fmt.lower()}" if isinstance(fmt, str) else "image"
    return f"[image: {mime}, {size[0]}x{size[1]}]" if size else f"[image: {mime}]"
