"""The wire: ORS requests in, typed and validated answers out, HTTP-level retries only. Imports nothing
of the session layer or above."""

from __future__ import annotations

__all__: list[str] = []  # internal: generated modules import the runtime's public names from `orlgen.runtime`
