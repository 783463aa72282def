"""Sessions within what an env can take: addresses and the event-loop thread, admission (the only owner
of a session's budget slot), the budget, backoff, breaker, prefetch, the task draw and the runtime's
counters."""

from __future__ import annotations

__all__: list[str] = []  # internal: generated modules import the runtime's public names from `orlgen.runtime`
