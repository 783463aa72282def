"""The tasks file of a format-2 snapshot: its stored tasks, one canonical JSON object per line.

Each line is `{"index": I, "spec": {...}, "split": "S"}` with sorted keys, no indent, UTF-8 (a
lone surrogate kept as its `\\uXXXX` escape), in (split, index) order. Without an indent,
`json.dumps` runs CPython's C encoder: writing or checking 20,000 tasks costs tens of
milliseconds, where the one-file format's `indent=2` ran the pure-Python one.

Reading checks every line by round trip: a line is accepted only if encoding what it parses to
gives the line back. That refuses, without a parse hook, whatever would show a reviewer other
content than orlgen reads (a key given twice, `NaN`, `1e400`, spacing, key order, escapes),
so a tasks file whose bytes match the hash its interface records is also canonical.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_KEYS = ["index", "spec", "split"]
# One encoder for every line: `json.dumps` with options builds a new one per call.
_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)


class TasksFileError(ValueError):
    """A line of a tasks file is not what orlgen writes; the message names the line."""


def encode(rows: Iterable[tuple[str, int, dict[str, Any]]]) -> str:
    """The file's text for (split, index, spec) rows, already in canonical order."""
    return "".join(_line(split, index, spec) + "\n" for split, index, spec in rows)


def _line(split: str, index: int, spec: dict[str, Any]) -> str:
    return _escaped(_ENCODER.encode({"index": index, "spec": spec, "split": split}))


def _escaped(text: str) -> str:
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def decode(data: bytes) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """split → [(index, spec)] of a canonical tasks file; `TasksFileError` names the first bad line."""
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise TasksFileError(f"not UTF-8 text (byte {exc.start})") from exc
    if text and not text.endswith("\n"):
        raise TasksFileError("the last line has no newline: the file was cut short")
    lines = text.splitlines()
    rows = _parsed(lines)
    found: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    last: tuple[str, int] | None = None
    for number, row in enumerate(rows, 1):
        split, index, spec = _fields(row, number)
        if last is not None and (split, index) <= last:
            raise TasksFileError(f"line {number}: not in (split, index) order after {last[0]}[{last[1]}]")
        last = (split, index)
        found.setdefault(split, []).append((index, spec))
    return found


def _parsed(lines: list[str]) -> list[Any]:
    """Every line parsed and proven canonical: one C decode and one C encode of the whole file
    when it is canonical (the common case), line by line only to name a bad line."""
    try:
        rows: list[Any] = json.loads("[" + ",".join(lines) + "]")
        if _escaped(_ENCODER.encode(rows)) == "[" + ", ".join(lines) + "]":
            return rows
    except (ValueError, RecursionError):
        pass
    for number, line in enumerate(lines, 1):
        _row(line, number)
    raise TasksFileError("not what orlgen writes")  # unreachable: some line is not canonical


def _row(line: str, number: int) -> None:
    """Raise the `TasksFileError` that names what is wrong with this line, if anything."""
    try:
        row = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise TasksFileError(f"line {number}: not valid JSON ({str(exc).splitlines()[0][:200]})") from exc
    try:
        canonical = _escaped(_ENCODER.encode(row)) == line
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
