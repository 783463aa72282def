"""Server and exception text made fit for one line of a terminal."""

from __future__ import annotations

import re
from collections.abc import Mapping

from orlgen.runtime.redaction import redact

MESSAGE_CHARS = 300  # server text quoted in a message is cut to this length


# ANSI/OSC escape sequences, then any other control character (newlines included).
_ESCAPES = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]+")


def clean(text: str, secrets: Mapping[str, str] | None = None, limit: int = MESSAGE_CHARS) -> str:
    """Server or exception text made safe for one line of a terminal: escape sequences and
    control characters removed, credentials masked, cut to `limit` characters."""
    values = [value for value in (secrets or {}).values() if isinstance(value, str)]
    # Cut first (server text can be megabytes), keeping enough that a secret at the cut is whole.
    text = text[: 2 * limit + max(map(len, values), default=0)]
    text = redact(_CONTROL.sub(" ", _ESCAPES.sub("", text)).strip(), values)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def last_line(text: str) -> str:
    """The last non-blank line of `text`: the exception at the end of a traceback."""
    lines = [line for line in _ESCAPES.sub("", text).splitlines() if line.strip()]
    return lines[-1].strip() if lines else text
