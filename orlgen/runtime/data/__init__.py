"""What a snapshot holds, read with no network: the env's spec (`EnvSpec`), its stored tasks and the
dataset columns."""

from __future__ import annotations

__all__: list[str] = []  # internal: generated modules import the runtime's public names from `orlgen.runtime`
