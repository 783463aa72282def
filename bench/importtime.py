"""Reading `python -X importtime` output."""

from __future__ import annotations

import re


def importtime_top(stderr: str) -> dict[str, tuple[int, int]]:
    """Top-level entries of `-X importtime`: name → (self µs, cumulative µs)."""
    return {name: times for name, depth, times in _importtime(stderr) if depth == 0}


def importtime_children(stderr: str, parent: str) -> dict[str, int]:
    """Direct imports made by the top-level import `parent`: name → cumulative µs."""
    children: dict[str, int] = {}
    pending: dict[str, int] = {}
    for name, depth, (_, cumulative) in _importtime(stderr):
        if depth == 0:
            if name == parent:
                children = pending
            pending = {}
        elif depth == 1:
            pending[name] = cumulative
    return children


def _importtime(stderr: str) -> list[tuple[str, int, tuple[int, int]]]:
    entries = []
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S.*)$", line)
        if match:
            entries.append(
                (match.group(4).strip(), len(match.group(3)) // 2, (int(match.group(1)), int(match.group(2))))
            )
    return entries
