"""Verify rendered modules before anything is written: a module that does not work is never
checked in.

Each module is imported in a child interpreter started with `-I` (isolated: neither the working
directory nor PYTHON* variables on its path, so a module named by a schema could not be found
even if one slipped through). There, every tool method is called with a payload built from the
tool's sanitised schema, through the method's own signature and arguments dict, and the params
model must hand the payload back to the wire unchanged (a model that masked a password or
turned a number into a string would not); `transformers.utils.get_json_schema` must read every
method, as TRL will. The child starts while the parent renders, so its imports cost little.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from orlgen.errors import OrlgenError
from orlgen.plan.planner import tool_names
from orlgen.schema import Node, Schema
from orlgen.snapshot.model import Snapshot

_MAX_SAMPLE_DEPTH = 8


class VerifyError(OrlgenError):
    """A rendered module failed verification; the message names the module and the tool."""


def shown(snapshot: Snapshot) -> dict[str, str]:
    """wire name → the name `get_json_schema` must read off the tool's method."""
    return {wire: name for wire, (_, name) in tool_names(snapshot).items()}


def samples(snapshot: Snapshot) -> dict[str, dict[str, Any]]:
    """A valid payload per tool with parameters (wire names → values), from its schema."""
    out = {}
    for tool in snapshot.tools:
        schema = tool.parsed_schema()
        root = schema.resolve(schema.root)
        if root.properties:
            out[tool.name] = _object(root, schema, 0)
    return out


def _sample(node: Node, schema: Schema, depth: int) -> Any:
    node = schema.resolve(node)
    if depth > _MAX_SAMPLE_DEPTH:
        return None
    if node.enum is not None:
        return node.enum[0]
    if node.has_default:
        return node.default
    if node.any_of:
        usable = [b for b in node.any_of if schema.json_types(b) != {"null"}] or list(node.any_of)
        return _sample(usable[0], schema, depth + 1)
    if len(node.all_of) == 1:
        return _sample(node.all_of[0], schema, depth + 1)
    kind = next((t for t in node.types if t != "null"), None) or next(iter(sorted(schema.json_types(node))), None)
    sampler = _SAMPLERS.get(kind) if kind is not None else None
    return None if sampler is None else sampler(node, schema, depth)


def _string(node: Node, schema: Schema, depth: int) -> str:
    length = node.constraint("minLength") or 1
    return "a" * min(length, 1000)


def _number(node: Node, schema: Schema, depth: int) -> int | float | None:
    """A number inside the bounds, or None when none of a few candidates is (the parameter is
    then left out of the payload rather than failing the check)."""
    bounds = dict(node.constraints)
    low = _bound(bounds, ("minimum", "exclusiveMinimum"), max)
    high = _bound(bounds, ("maximum", "exclusiveMaximum"), min)
    step = bounds.get("multipleOf")
    candidates = [0, low, high, None if low is None else low + 1, None if high is None else high - 1]
    candidates += [(low + high) / 2] if low is not None and high is not None else []
    candidates += [(low // step + 1) * step] if step and low is not None else []
    for value in candidates:
        if value is not None and _fits(value, bounds, "integer" in node.types):
            return int(value) if "integer" in node.types else value
    return None


def _bound(bounds: dict[str, Any], keys: tuple[str, str], pick: Any) -> Any:
    found = [bounds[key] for key in keys if bounds.get(key) is not None]
    return pick(found) if found else None


def _fits(value: float, bounds: dict[str, Any], integer: bool) -> bool:
    step = bounds.get("multipleOf")
    return (
        (not integer or float(value).is_integer())
        and (bounds.get("minimum") is None or value >= bounds["minimum"])
        and (bounds.get("maximum") is None or value <= bounds["maximum"])
        and (bounds.get("exclusiveMinimum") is None or value > bounds["exclusiveMinimum"])
        and (bounds.get("exclusiveMaximum") is None or value < bounds["exclusiveMaximum"])
        and (not step or (value / step).is_integer())
    )


def _array(node: Node, schema: Schema, depth: int) -> list[Any]:
    fixed = [_sample(item, schema, depth + 1) for item in node.prefix_items]
    count = max((node.constraint("minItems") or 0) - len(fixed), 0)
    extra = [_sample(node.items, schema, depth + 1) for _ in range(min(count, 50))] if node.items else []
    return fixed + extra


def _object(node: Node, schema: Schema, depth: int) -> dict[str, Any]:
    sampled = {name: _sample(sub, schema, depth + 1) for name, sub in node.properties if name in node.required}
    return {name: value for name, value in sampled.items() if value is not None or _nullable(name, node, schema)}


def _nullable(name: str, node: Node, schema: Schema) -> bool:
    return schema.admits_null(dict(node.properties)[name])


_SAMPLERS: dict[str, Callable[[Node, Schema, int], Any]] = {
    "string": _string,
    "integer": _number,
    "number": _number,
    "boolean": lambda node, schema, depth: True,
    "array": _array,
    "object": _object,
}


class Verifier:
    """A child interpreter (`orlgen.render.verify_child`) that verifies modules: `start` it as soon as
    some module will be rendered, so its imports (transformers: about half a second of CPU)
    overlap the render; `check` when they are rendered. A command that renders no module never
    starts it."""

    def __init__(self) -> None:
        self._child: subprocess.Popen[str] | None = None

    def start(self) -> None:
        if self._child is None:
            self._child = subprocess.Popen(
                [sys.executable, "-I", "-m", "orlgen.render.verify_child"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env={**os.environ, "TRANSFORMERS_VERBOSITY": "error"},
            )

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._child is not None and self._child.poll() is None:
            self._child.kill()
            self._child.wait()

    def check(self, modules: Sequence[tuple[Path, str, Snapshot]], beside: Mapping[Path, str] | None = None) -> None:
        """Raise `VerifyError` unless every module (path, source, snapshot) passes. `beside` holds
        the sources of files the modules import from their own directory (an env's models file,
        through `orlgen.runtime.siblings`): each is written under its own name next to them."""
        if not modules:
            return
        self.start()
        assert self._child is not None
        with tempfile.TemporaryDirectory(prefix="orlgen-verify-") as tmp:
            folders = {
                path.parent: Path(tmp) / f"d{i}" for i, path in enumerate(dict.fromkeys(p for p, _, _ in modules))
            }
            for path, source in {**(beside or {}), **{path: source for path, source, _ in modules}}.items():
                if path.parent in folders:
                    folders[path.parent].mkdir(exist_ok=True)
                    (folders[path.parent] / path.name).write_text(source, encoding="utf-8")
            jobs = []
            for path, _, snapshot in modules:
                file = folders[path.parent] / path.name
                jobs.append(
                    {"name": str(path), "file": str(file), "samples": samples(snapshot), "shown": shown(snapshot)}
                )
            try:
                out, err = self._child.communicate(json.dumps(jobs), timeout=300)
            except subprocess.TimeoutExpired:
                raise VerifyError("verifying the modules took more than 300 s") from None
        if self._child.returncode != 0:
            lines = (out.strip() or err.strip() or "the verifier died").splitlines()
            raise VerifyError(lines[-1])
