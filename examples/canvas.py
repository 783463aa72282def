"""A canvas the model looks at: the ORS pattern of computer-use environments, whose tools answer
with screenshots.

Each task paints a small canvas in one colour. The prompt shows the canvas (text and an image
block, in that order); `screenshot` shows it again, `answer` grades the colour named. Images are
real PNG files, made in-process from raw bytes with `zlib` (nothing is downloaded, no imaging
library is needed on the server), sent base64-encoded as `ImageBlock(data=..., mimeType=...)`.
"""

import base64
import struct
import zlib

from openreward.environments import Environment, ImageBlock, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

COLOURS = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (40, 70, 210), "yellow": (230, 200, 40)}
SIZE = 56  # pixels a side: the smallest multiple of a Qwen2.5-VL patch grid that needs no resizing


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour 8-bit RGB PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def image_block(colour: str) -> ImageBlock:
    data = base64.b64encode(png(SIZE, SIZE, COLOURS[colour])).decode("ascii")
    return ImageBlock(data=data, mimeType="image/png")


class AnswerParams(BaseModel):
    colour: str = Field(description="The colour of the canvas, in one lower-case word.")


class Canvas(Environment):
    """Name the colour of the canvas."""

    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split: str):
        return [{"colour": colour} for colour in COLOURS]

    def get_prompt(self):
        return [
            TextBlock(text="What colour is this canvas? Answer with the answer tool."),
            image_block(self.task_spec["colour"]),
        ]

    @tool
    def screenshot(self) -> ToolOutput:
        """Take a screenshot of the canvas.

        Returns:
            The canvas as a PNG image, then its size in words.
        """
        return ToolOutput(
            blocks=[image_block(self.task_spec["colour"]), TextBlock(text=f"The canvas is {SIZE}x{SIZE} pixels.")]
        )

    @tool
    def answer(self, params: AnswerParams) -> ToolOutput:
        """Name the canvas's colour. Ends the episode."""
        won = params.colour.strip().lower() == self.task_spec["colour"]
        return ToolOutput(
            blocks=[TextBlock(text="correct" if won else "wrong")], reward=1.0 if won else 0.0, finished=True
        )
