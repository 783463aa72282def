"""Masking credentials out of text: a URL's user-info and credential-looking query parameters,
and given secret values. A leaf: every module that shows a server's words or an address to a
person (messages, logs, `env.error`) can use it without importing the rest of the runtime."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable

# Query parameters whose value is a credential, as far as a name can tell.
CREDENTIAL_NAME = re.compile(r"token|key|secret|passw|pwd|sig|auth|credential|session|cookie", re.IGNORECASE)
# The scheme's length is bounded: unbounded, a long run of letters costs quadratic time.
_URL = re.compile(r"(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s'\"<>]+")


def public_url(url: str, mask: str | None = None) -> str:
    """`url` without user-info or credential-looking query parameters (`?token=...`).

    With `mask`, they are replaced by it instead of removed (for messages, where a reader
    should see that something was there).
    """
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return url if mask is None else mask
    netloc = parts.netloc.rpartition("@")[2]
    if mask is not None and "@" in parts.netloc:
        netloc = f"{mask}@{netloc}"
    query = []
    for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if CREDENTIAL_NAME.search(name):
            if mask is not None:
                query.append((name, mask))
        else:
            query.append((name, value))
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(query, safe="*"), parts.fragment)
    )


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every URL's credentials masked and every value in `secrets` replaced."""
    return mask_secrets(_URL.sub(lambda match: public_url(match.group(0), mask="***"), text), secrets)


MASKED_LENGTH = 3  # a shorter secret value is not masked: it would mask half of every text


def mask_secrets(text: str, secrets: Iterable[str]) -> str:
    """`text` with every value in `secrets` (of `MASKED_LENGTH` characters or more) replaced by `***`, longest first."""
    for value in sorted((v for v in secrets if isinstance(v, str) and len(v) >= MASKED_LENGTH), key=len, reverse=True):
        text = text.replace(value, "***")
    return text
