"""The generated header: written and parsed in one place, and parsed only as orlgen writes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from orlgen.render import header

REPO = Path(__file__).resolve().parent.parent


def test_the_header_names_the_versions_and_the_snapshot_and_round_trips():
    written = header.current("echo.snapshot.json", "ab" * 32, "trl", "trl>=1.16,<2")
    text = header.write(written)
    assert text.count("\n") == header.LINES
    assert header.parse(text.encode() + b'"""A module."""\n') == written
    assert "datamodel-code-generator" in text and "black" in text and "sha256 " + "ab" * 32 in text


def test_every_checked_in_module_starts_with_a_header_orlgen_parses():
    for module in sorted((REPO / "generated").glob("*.py")):
        assert header.parse(module.read_bytes()) is not None, module


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda lines: ["# -*- coding: utf-7 -*-", *lines[1:]], id="cookie-line-1"),
        pytest.param(lambda lines: [lines[0], "# coding: utf-7"], id="cookie-line-2"),
        pytest.param(lambda lines: [lines[0] + " ", lines[1]], id="trailing-space"),
        pytest.param(lambda lines: [lines[0].replace("DO NOT EDIT.", "Edit freely."), lines[1]], id="wording"),
        pytest.param(lambda lines: [lines[0].replace("sha256 ", "sha256 0"), lines[1]], id="hash-too-long"),
        pytest.param(lambda lines: lines[:1], id="one-line"),
    ],
)
def test_a_header_that_is_not_exactly_what_orlgen_writes_does_not_parse(edit):
    lines = header.write(header.current("echo.snapshot.json", "ab" * 32, "trl", "trl>=1.16,<2")).splitlines()
    assert header.parse(("\n".join(edit(lines)) + "\n").encode()) is None


def test_only_files_starting_with_the_prefix_count_as_generated(tmp_path: Path):
    own, note = tmp_path / "own.py", tmp_path / "note.py"
    own.write_text(header.write(header.current("own.snapshot.json", "0" * 64, "trl", "trl>=1.16,<2")))
    note.write_text(f'"""{header.PREFIX}? No."""\n')
    assert header.is_generated(own) and not header.is_generated(note)


def test_a_module_from_before_trainers_reads_as_stale_not_hand_edited():
    """The header's second line names the trainer now; a module whose line does not (an older
    orlgen) still parses, its trainer None, and `check` calls it stale, naming both."""
    from orlgen.review.check import cause

    current = header.write(header.current("echo.snapshot.json", "ab" * 32, "trl", "trl>=1.16,<2"))
    first, second = current.splitlines()
    assert second.startswith("# For trainer trl (trl>=1.16,<2); models by datamodel-code-generator ")
    older = f"{first}\n# M{second.split('; m', 1)[1]}\n"
    parsed = header.parse(older.encode())
    assert parsed is not None and (parsed.trainer, parsed.written_for) == (None, None)
    assert cause((older + "x = 1\n").encode(), (current + "x = 1\n").encode()) == (
        "stale: the header names no trainer (an older orlgen); this is trainer trl (trl>=1.16,<2)"
    )
