"""An ORS environment whose tool answers with as many, and as large, real PNG images as it is
asked for: eight 9000x9000 ones are 2.6 MB of base64 that decode to 1.9 GB of pixels. Images
are solid-colour RGB PNGs compressed row by row with `zlib` (the server never holds the pixels)
and made once per size."""

from __future__ import annotations

import base64
import functools
import struct
import zlib

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field


@functools.lru_cache(maxsize=4)
def png_base64(side: int) -> str:
    """A side x side solid-colour 8-bit RGB PNG, base64-encoded."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes((200, 40, 40)) * side
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode("ascii")


class ShotsParams(BaseModel):
    count: int = Field(ge=0, le=64, description="How many images.")
    side: int = Field(ge=1, le=9000, description="Pixels a side.")


class ImageBomb(Environment):
    """Answer with images."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"n": 0}]

    def get_prompt(self):
        return [TextBlock(text="Look at the images.")]

    @tool
    def shots(self, params: ShotsParams) -> ToolOutput:
        """Answer with `count` images of `side` x `side` pixels, then a line of text."""
        blocks = [ImageBlock(data=png_base64(params.side), mimeType="image/png") for _ in range(params.count)]
        return ToolOutput(blocks=[*blocks, TextBlock(text=f"{params.count} images")])

    @tool
    def terminal(self) -> ToolOutput:
        """Answer with text holding terminal control sequences."""
        return ToolOutput(blocks=[TextBlock(text="ok\x1b[2J\x1b]0;owned\x07\r\nnext\x9b31m\x00end")])
