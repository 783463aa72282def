"""Variants of the example envs for tests that compare two captures of "the same" environment."""

from __future__ import annotations

from pydantic import BaseModel, Field

from examples.wordgrid import SIZE, WordGrid
from openreward.environments import TextBlock, ToolOutput, tool


class ReorderedPlaceLetterParams(BaseModel):
    column: int = Field(ge=0, le=SIZE - 1)
    row: int = Field(ge=0, le=SIZE - 1)
    letter: str = Field(min_length=1, max_length=1)


class ReorderedWordGrid(WordGrid):
    """`WordGrid` whose `place_letter` declares `column` before `row`: nothing else changed."""

    @tool
    def place_letter(self, params: ReorderedPlaceLetterParams) -> ToolOutput:
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
