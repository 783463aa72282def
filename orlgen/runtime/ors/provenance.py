"""Which deployment of an environment answered: what its ORS server says at `/version`.

An ORS server reports the openreward SDK version it runs and, when its deployment sets
`OPENREWARD_BUILD_SHA`, the build's commit: `{"version": ..., "build_sha": ...}`. A snapshot
records both (`Snapshot.deployment`) for URL and catalog targets, so that "same schema, new
deployment" shows in `snapshot --check` and in the adapter's drift guard rather than passing
unseen. A `module:Class` target records nothing: its server is orlgen's own, on the SDK
installed here, which says nothing about the env. The OpenReward platform's deployment
commit is not reachable through the SDK's client (only the `orwd` command lists deployments,
through a private helper), so it is not recorded.

The server is untrusted: a value that is not a short version-like token is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FIELDS = {"version": "sdk_version", "build_sha": "build_sha"}  # /version's key → the snapshot's
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,79}")


async def live(env: Any) -> dict[str, str] | None:
    """The deployment `env` (anything with an async `version()`: the runtime's `ors.Client`,
    capture's SDK handle) reports, as snapshot fields; None when it reports nothing usable (best
    effort: an old server may have no `/version`)."""
    return parse(await env.version())


def parse(answer: Any) -> dict[str, str] | None:
    if not isinstance(answer, Mapping):
        return None
    fields = {
        ours: value
        for theirs, ours in FIELDS.items()
        if isinstance(value := answer.get(theirs), str) and _TOKEN.fullmatch(value)
    }
    return fields or None


def changed(recorded: Mapping[str, str | None], now: Mapping[str, str | None] | None) -> str | None:
    """How the deployment changed, in words ("build abc → def; SDK 0.1.1 → 0.1.2"), None when
    nothing recorded changed. A field the snapshot did not record is not compared."""
    if now is None:
        return None
    parts = []
    for field, label in (("build_sha", "build"), ("sdk_version", "SDK")):
        before, after = recorded.get(field), now.get(field)
        if before is not None and after != before:
            parts.append(f"{label} {before} → {after or 'unknown'}")
    return "; ".join(parts) or None
