"""A warning, once per episode owner (an adapter class) and process, naming each secret the snapshot records that
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
from typing import TYPE_CHECKING, Any

from .. import process
from ..ors.secrets import API_KEY_SECRETS

if TYPE_CHECKING:
    from ..data.spec import EnvSpec

logger = logging.getLogger("orlgen")

_checked: set[str] = process.per_process(set())
_lock = process.lock()


def warn_missing_secrets(
    owner: str, name: str, spec: EnvSpec, secrets: Mapping[str, Any] | None, api_key: str | None
) -> None:
    """Log which of `spec.secret_names` no environment variable provides, the first time an
    episode of `owner` is built (`name` names it in the line). Explicit `secrets=` replace the
    variables, so they are not read; `api_key=` provides the two names the SDK forwards it as."""
    with _lock:
        if owner in _checked:
            return
        _checked.add(owner)
    if secrets is not None:
        return
    covered = set(API_KEY_SECRETS) if api_key else set()
    missing = [secret for secret in spec.secret_names if not os.environ.get(secret) and secret not in covered]
    if missing:
        names = ", ".join(missing)
        logger.warning(
            f"{name}: the snapshot records the secret(s) {names}, but no such environment variable is "
            f"set: every session opens without it (set {names}, or pass secrets={{...}} to the adapter)"
        )
