"""An ORS environment whose tools return several content blocks, for the fidelity benchmark's
output-block count: `show` returns text, an image and text; `notes` two text blocks."""

from __future__ import annotations

import base64
import struct
import zlib

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, tool


def _png(width: int = 2, height: int = 2) -> bytes:
    """A small valid PNG (red pixels), built here: nothing is downloaded or checked in."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = base64.b64encode(_png()).decode()
BLOCKS = {
    "show": [
        TextBlock(text="The screen, before:"),
        ImageBlock(data=PNG, mimeType="image/png"),
        TextBlock(text="Nothing else changed."),
    ],
    "notes": [TextBlock(text="First note."), TextBlock(text="Second note.")],
}


class Blocks(Environment):
    """One task; two tools that answer with several blocks each."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": 0}]

    def get_prompt(self):
        return [TextBlock(text="Look at the screen.")]

    @tool
    def show(self) -> ToolOutput:
        """Show the screen."""
        return ToolOutput(blocks=BLOCKS["show"])

    @tool
    def notes(self) -> ToolOutput:
        """Read the notes."""
        return ToolOutput(blocks=BLOCKS["notes"])
