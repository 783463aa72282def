"""The word-grid environment: fill a 5×5 letter grid so that the task's word can be read in it.

Written the way published ORS game environments are written: the tools document their
parameters in Google-style `Args:`/`Returns:` blocks of their docstrings, the params models
carry no `Field` descriptions, and parameters are declared in the order a person reads them
(`row, column, letter`), which is not alphabetical. `find_words` has schema defaults
(`limit = 10`, a nested options model with its own defaults, an optional `(row, column)` pair)
and a nested field with a null branch.

Serve it with `python -m examples.wordgrid [PORT]`; the env key is `wordgrid`.
"""

from __future__ import annotations

import sys
from typing import Literal

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel, Field

SIZE = 5
WORDS = ["grid", "word", "typed", "snap", "tool", "reward", "model", "train"]
SPLIT_SIZES = {"train": 8, "test": 4}


class PlaceLetterParams(BaseModel):
    row: int = Field(ge=0, le=SIZE - 1)
    column: int = Field(ge=0, le=SIZE - 1)
    letter: str = Field(min_length=1, max_length=1)


class SearchOptions(BaseModel):
    direction: Literal["across", "down", "both"] = "both"
    min_length: int = 3
    stop_at: str | None = None


class FindWordsParams(BaseModel):
    prefix: str = Field(min_length=1)
    limit: int = 10
    start: tuple[int, int] | None = None
    options: SearchOptions = SearchOptions()


class WordGrid(Environment):
    """Spell the task's word in the grid, across or down, then submit."""

    def __init__(self, task_spec: dict = {}, secrets: dict[str, str] = {}) -> None:
        super().__init__(task_spec, secrets)
        self.grid = [["." for _ in range(SIZE)] for _ in range(SIZE)]

    @classmethod
    def list_splits(cls):
        return list(SPLIT_SIZES)

    @classmethod
    def list_tasks(cls, split: str):
        offset = 0 if split == "train" else SPLIT_SIZES["train"]
        return [{"word": WORDS[(offset + i) % len(WORDS)], "seed": offset + i} for i in range(SPLIT_SIZES[split])]

    def get_prompt(self):
        return [TextBlock(text=f"Spell {self.task_spec['word']!r} in the {SIZE}x{SIZE} grid, then call submit.")]

    def _rows(self) -> list[str]:
        return ["".join(row) for row in self.grid]

    @tool
    def place_letter(self, params: PlaceLetterParams) -> ToolOutput:
        """Write one letter into a cell of the grid, replacing what was there.

        Rows and columns count from zero at the top-left corner.

        Args:
            row: Row of the cell, counted from the top.
            column: Column of the cell, counted from the left.
            letter: The letter to write.

        Returns:
            The grid after the move, one line per row.
        """
        self.grid[params.row][params.column] = params.letter.lower()
        return ToolOutput(blocks=[TextBlock(text="\n".join(self._rows()))])

    @tool
    def find_words(self, params: FindWordsParams) -> ToolOutput:
        """List the words of the dictionary that start with a prefix.

        Args:
            prefix: Letters the words must start with.
            limit: Largest number of words to list.
            start: Optional (row, column) cell the word would start from.
            options: How to search the grid.

        Returns:
            The matching words, comma-separated.
        """
        found = [w for w in WORDS if w.startswith(params.prefix.lower()) and len(w) >= params.options.min_length]
        return ToolOutput(blocks=[TextBlock(text=", ".join(found[: params.limit]) or "(none)")])

    @tool
    def submit(self) -> ToolOutput:
        """Submit the grid; the episode ends and scores 1 when the word can be read in it.

        Returns:
            Whether the word was found.
        """
        word = self.task_spec["word"]
        columns = ["".join(row[c] for row in self.grid) for c in range(SIZE)]
        won = any(word in line for line in self._rows() + columns)
        return ToolOutput(blocks=[TextBlock(text="found" if won else "not found")], reward=float(won), finished=True)


if __name__ == "__main__":
    from orlgen.serve import main

    main(["examples.wordgrid:WordGrid", *sys.argv[1:]])
