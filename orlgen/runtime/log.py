"""`log_once`: what repeats every rollout (an image shown as a marker, a key kept from a target,
a dead env) is said once per process. A leaf, so the wire and the core log alike."""

from __future__ import annotations

import logging

from . import process

logger = logging.getLogger("orlgen")

_logged: set[str] = process.per_process(set())
_logged_lock = process.lock()


def log_once(key: str, message: str) -> None:
    """One warning line per process for `key`."""
    with _logged_lock:
        if key in _logged:
            return
        _logged.add(key)
    logger.warning("orlgen: %s", message)
