"""TRL's shim over the `Episode` core: `EnvAdapter`, its reward functions, group scores, mixtures,
TRL's calling convention and its reference rollout loop."""

from __future__ import annotations

__all__: list[str] = []  # internal: generated modules import the runtime's public names from `orlgen.runtime`
