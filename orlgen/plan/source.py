"""Python source text for templates: literals and docstrings, escaped once, here."""

from __future__ import annotations

from typing import Any


class Source(str):
    """Python source text that is safe to paste into a template as is."""


def literal(value: Any) -> Source:
    """A Python literal for a JSON-like value (str, number, bool, None, list, dict, tuple)."""
    return Source(repr(value))


def docstring_literal(text: str, indent: str) -> Source:
    """A triple-quoted literal of `text`, lines after the first indented to `indent`."""
    lines = _escape(text).split("\n")
    body = lines[0] + "".join(f"\n{indent}{line}" if line else "\n" for line in lines[1:])
    closing = f"\n{indent}" if len(lines) > 1 else ""
    return Source(f'"""{body}{closing}"""')


def _escape(text: str) -> str:
    """Escape for a `\"\"\"` literal: backslashes, unprintable characters, and any quote that
    could join another or end the literal early."""
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char == '"' and (i + 1 == len(text) or text[i + 1] == '"'):
            out.append('\\"')
        elif char == "\n" or char.isprintable():
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)
