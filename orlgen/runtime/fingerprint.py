"""A short, stable fingerprint of a tool as the server describes it, for the drift guard."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def fingerprint(description: str | None, input_schema: Any) -> str:
    """Equal for equal descriptions and schemas, whatever the key order; 16 hex digits."""
    canonical = json.dumps([description or "", input_schema or None], sort_keys=True, ensure_ascii=False)
    # surrogatepass: a server may send a lone surrogate, and its fingerprint must still exist.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
