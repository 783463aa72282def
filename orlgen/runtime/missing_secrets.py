"""A warning, once per adapter class and process, naming each secret the snapshot records that
the process does not have.

A generated adapter forwards the secrets its snapshot names (`spec.secret_names`) from the
environment variables of those names, read at each `reset`. A variable missing at training time
would otherwise show only as every `reset` failing with the server's own words; this names it
up front, when the first adapter of the class is built (TRL builds them all before training).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from . import process
from .secrets import API_KEY_SECRETS

logger = logging.getLogger("orlgen")

_checked: set[type] = process.per_process(set())
_lock = process.lock()


def warn_missing_secrets(cls: Any, secrets: Mapping[str, Any] | None, api_key: str | None) -> None:
    """Log which of `cls.spec.secret_names` no environment variable provides, the first time an
    adapter of `cls` is built. Explicit `secrets=` replace the variables, so they are not read;
    `api_key=` provides the two names the SDK forwards it as."""
    with _lock:
        if cls in _checked:
            return
        _checked.add(cls)
    if secrets is not None:
        return
    covered = set(API_KEY_SECRETS) if api_key else set()
    missing = [name for name in cls.spec.secret_names if not os.environ.get(name) and name not in covered]
    if missing:
        names = ", ".join(missing)
        logger.warning(
            f"{cls.__name__}: the snapshot records the secret(s) {names}, but no such environment variable is "
            f"set: every session opens without it (set {names}, or pass secrets={{...}} to the adapter)"
        )
