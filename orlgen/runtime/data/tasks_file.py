"""A snapshot's tasks file, written and read in one place: `snapshot` writes it, `check` gives its
verdict on it and `build_dataset` reads it, all through `encode` and `decode`.

Each row is one line, `{"index": I, "spec": {...}, "split": "S"}` then `\\n`, with sorted keys, no
indent, UTF-8, in (split, index) order. Without an indent, `json.dumps` runs CPython's C encoder:
writing or checking 20,000 tasks costs tens of milliseconds.

A line is what a reviewer's diff shows as one line and what `str.splitlines()` would split: so
every character either would split on is escaped, whatever JSON allows raw. The JSON encoder
already escapes the C0 controls (`\\n`, `\\r`, `\\v`, `\\f`, `\\x1c`-`\\x1e`); U+0085, U+2028 and
U+2029 are escaped here, and a lone surrogate (which UTF-8 cannot hold) too. The reader splits on
`\\n` only, and accepts a line only if encoding what it parses to gives the line back: that
refuses whatever would show a reviewer other content than orlgen reads (CRLF line ends, two rows
on one line, a raw separator, a key given twice, `NaN`, `1e400`, spacing, key order, escapes),
with one message naming the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..errors import OrlgenRuntimeError, first_line

# What UTF-8 cannot hold (lone surrogates) and what `str.splitlines()` splits on that the JSON
# encoder leaves raw: each is written as its `\uXXXX` escape.
_RAW = re.compile("[\ud800-\udfff\x85\u2028\u2029]")
# Every character `str.splitlines()` splits on: a line holding one raw is named for it.
_SEPARATORS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_KEYS = ["index", "spec", "split"]
# One encoder for every line: `json.dumps` with options builds a new one per call.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)

Rows = dict[str, list[tuple[int, dict[str, Any]]]]


class TasksFileError(OrlgenRuntimeError, ValueError):
    """A line of a tasks file is not what orlgen writes; the message names the line."""


def encode(rows: Iterable[tuple[str, int, dict[str, Any]]]) -> str:
    """The file's text for (split, index, spec) rows, already in canonical order."""
    return "".join(_line(split, index, spec) + "\n" for split, index, spec in rows)


def _line(split: str, index: int, spec: dict[str, Any]) -> str:
    return one_line(_ENCODER.encode({"index": index, "spec": spec, "split": split}))


def one_line(text: str) -> str:
    """JSON text with every character `str.splitlines()` splits on (and every lone surrogate)
    written as an escape: one line for git, a diff and every reader. The eval's rows use it too."""
    return _RAW.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def decode(data: bytes) -> Rows:
    """split → [(index, spec)] of a canonical tasks file; `TasksFileError` names the first bad line."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise TasksFileError(f"not UTF-8 text (byte {exc.start})") from exc
    if text and not text.endswith("\n"):
        raise TasksFileError("the last line has no newline: the file was cut short")
    lines = text[:-1].split("\n") if text else []
    found: Rows = {}
    last: tuple[str, int] | None = None
    for number, row in enumerate(_parsed(lines), 1):
        split, index, spec = _fields(row, number)
        if last is not None and (split, index) <= last:
            raise TasksFileError(f"line {number}: not in (split, index) order after {last[0]}[{last[1]}]")
        last = (split, index)
        found.setdefault(split, []).append((index, spec))
    return found


def _parsed(lines: list[str]) -> list[Any]:
    """Every line parsed and proven canonical: one C decode of the whole file and one C encode
    per row when it is canonical (the common case), line by line only to name a bad line."""
    try:
        rows: list[Any] = json.loads("[" + ",".join(lines) + "]")
        if len(rows) == len(lines) and all(
            one_line(_ENCODER.encode(r)) == line for r, line in zip(rows, lines, strict=True)
        ):
            return rows
    except (ValueError, RecursionError):
        pass
    for number, line in enumerate(lines, 1):
        _row(line, number)
    raise TasksFileError("not what orlgen writes")  # unreachable: some line is refused alone


def _row(line: str, number: int) -> None:
    """Raise the `TasksFileError` that names what is wrong with this line, if anything."""
    separator = _SEPARATORS.search(line)
    if separator is not None:
        what = "a carriage return (CRLF line ends?)" if separator.group() == "\r" else "a raw line separator"
        raise TasksFileError(
            f"line {number}: holds {what} U+{ord(separator.group()):04X} at column {separator.start() + 1}; "
            "orlgen ends each row with \\n alone and writes every other line break escaped"
        )
    try:
        row = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise TasksFileError(f"line {number}: not one JSON row ({first_line(str(exc))[:200]})") from exc
    try:
        canonical = one_line(_ENCODER.encode(row)) == line
    except (ValueError, RecursionError):
        canonical = False
    if not canonical:
        raise TasksFileError(
            f"line {number}: not what orlgen writes (key order, spacing, escapes, a repeated key or a "
            "non-JSON number were edited)"
        )


def _fields(row: Any, number: int) -> tuple[str, int, dict[str, Any]]:
    if not isinstance(row, dict) or sorted(row) != _KEYS:
        raise TasksFileError(f"line {number}: not an object of exactly {', '.join(_KEYS)}")
    split, index, spec = row["split"], row["index"], row["spec"]
    if not isinstance(split, str) or type(index) is not int or index < 0 or not isinstance(spec, dict):
        raise TasksFileError(f"line {number}: split must be text, index a number ≥ 0, spec an object")
    return split, index, spec
