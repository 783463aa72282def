"""A capture target as given (`Owner/Env`, a URL, `module:EnvClass`): its kind and its URL."""

from __future__ import annotations

import re
import urllib.parse
from typing import Literal

from orlgen.capture.source_file import looks_like_a_file, refuse_file
from orlgen.errors import CaptureError
from orlgen.lookalike import module_target_problem
from orlgen.runtime.redaction import redact

_CATALOG = re.compile(r"^[\w.-]+/[\w.-]+$")
_MODULE = re.compile(r"^[\w.]+:\w+$")


def target_kind(target: str) -> Literal["catalog", "url", "module"]:
    if "://" in target:
        return "url"
    if looks_like_a_file(target):
        raise refuse_file(target)
    if _MODULE.match(target):
        check_module_target(target)
        return "module"
    if _CATALOG.match(target):
        return "catalog"
    raise CaptureError(f"{redact(target)!r} is neither a catalog name (Owner/Env), a URL, nor module:EnvClass")


def check_module_target(target: str) -> None:
    """Refuse a `module:Class` target a reviewer could misread (`lookalike.module_target_problem`)
    before anything is imported: `check` refuses the same targets in snapshots."""
    why = module_target_problem(target)
    if why is not None:
        raise CaptureError(f"target refused: {why}")


def server_url(target: str) -> str:
    """The server's base URL: no user-info, query or fragment.

    The SDK appends endpoint paths to a base URL and cannot carry either, and both are where
    credentials hide (`http://user:pass@host`, `?token=...`): dropping them means the snapshot,
    the generated module and every message record only where the server is. Credentials
    travel as `--secret api_key`, never in the target.
    """
    try:
        parts = urllib.parse.urlsplit(target)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise CaptureError(f"{redact(target)!r} is not a valid URL") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise CaptureError(f"{redact(target)!r} is not an http(s) URL")
    netloc = f"[{host}]" if ":" in host else host
    netloc += f":{port}" if port is not None else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
