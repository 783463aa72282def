"""Synthetic snapshots of N tools with realistic schemas: the helpdesk example's tool schemas
(nested models, enums, constraints, optional parameters with defaults, a no-argument tool),
copied round-robin under new names (`search_orders_007`)."""

from __future__ import annotations

from pathlib import Path

from bench.common import HELPDESK_SNAPSHOT


def synthetic_snapshot(tools: int, source: Path = HELPDESK_SNAPSHOT):
    """A canonical `Snapshot` named `synthetic_<tools>` with `tools` shared tools."""
    from orlgen.snapshot.model import load

    base = load(source)
    templates = sorted(base.tools, key=lambda tool: tool.name)
    copies = []
    for i in range(tools):
        template = templates[i % len(templates)]
        copies.append(
            template.model_copy(update={"name": f"{template.name}_{i:03d}", "shared": True, "offered_on": []})
        )
    return base.model_copy(update={"name": f"synthetic_{tools}", "tools": copies}).canonical()


def write_synthetic(tools: int, directory: Path) -> Path:
    """The snapshot file `<directory>/synthetic_<tools>.snapshot.json`."""
    snapshot = synthetic_snapshot(tools)
    path = directory / snapshot.file_name
    for file, data in snapshot.files(path).items():
        file.write_bytes(data)
    return path
