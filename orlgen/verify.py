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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import OrlgenError
from .schema import Node, Schema
from .snapshot import Snapshot

_MAX_SAMPLE_DEPTH = 8


class VerifyError(OrlgenError):
    """A rendered module failed verification; the message names the module and the tool."""


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
    return _SAMPLERS.get(kind, lambda n, s, d: None)(node, schema, depth)


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


_SAMPLERS = {
    "string": _string,
    "integer": _number,
    "number": _number,
    "boolean": lambda node, schema, depth: True,
    "array": _array,
    "object": _object,
}


class Verifier:
    """A child interpreter that verifies modules: start it early, `check` when they are rendered."""

    def __init__(self) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TRANSFORMERS_VERBOSITY": "error"},
        )

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._child.poll() is None:
            self._child.kill()
            self._child.wait()

    def check(self, modules: Iterable[tuple[Path, str, Snapshot]]) -> None:
        """Raise `VerifyError` unless every module (path, source, snapshot) passes."""
        with tempfile.TemporaryDirectory(prefix="orlgen-verify-") as tmp:
            jobs = []
            for i, (path, source, snapshot) in enumerate(modules):
                file = Path(tmp) / f"m{i}.py"
                file.write_text(source, encoding="utf-8")
                jobs.append({"name": str(path), "file": str(file), "samples": samples(snapshot)})
            try:
                out, err = self._child.communicate(json.dumps(jobs), timeout=300)
            except subprocess.TimeoutExpired:
                raise VerifyError("verifying the modules took more than 300 s") from None
        if self._child.returncode != 0:
            lines = (out.strip() or err.strip() or "the verifier died").splitlines()
            raise VerifyError(lines[-1])


# Runs in the child. Reads the jobs from stdin; exits 1 with one line naming what failed.
_CHILD = r"""
import importlib.util, inspect, json, sys
from pydantic import ValidationError
try:
    from transformers.utils import chat_template_utils
    from transformers.utils import get_json_schema
    # Generated hints never name torch or PIL types: skip importing them (seconds) for their types.
    chat_template_utils.is_torch_available = chat_template_utils.is_vision_available = lambda: False
except ImportError:
    get_json_schema = None

def fail(message):
    print(" ".join(str(message).split())[:500])
    sys.exit(1)

def run(job):
    spec = importlib.util.spec_from_file_location("orlgen_verify_" + str(abs(hash(job["file"]))), job["file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves postponed annotations through it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        fail(f"{job['name']}: does not import: {type(exc).__name__}: {exc}")
    from orlgen.runtime import UNSET, EnvAdapter
    classes = list({c for c in vars(module).values() if isinstance(c, type) and issubclass(c, EnvAdapter) and c is not EnvAdapter})
    if len(classes) != 1:
        fail(f"{job['name']}: expected one adapter class, found {len(classes)}")
    cls = classes[0]
    methods = {m.__name__: m for _, m in inspect.getmembers(cls, inspect.isfunction) if m.__name__ in module.TOOLS}
    for wire in module.TOOLS:
        where = f"{job['name']}: tool {wire!r}"
        method = methods.get(wire)
        if method is None:
            fail(f"{where}: no method carries this name")
        if get_json_schema is not None:
            try:
                described = get_json_schema(method)["function"]
            except Exception as exc:
                fail(f"{where}: get_json_schema cannot read the method: {exc}")
            if described["name"] != wire:
                fail(f"{where}: get_json_schema names it {described['name']!r}")
        sample = job["samples"].get(wire, {})
        seen = {}
        adapter = cls.__new__(cls)
        def record(name, model, arguments):
            given = {k: v for k, v in arguments.items() if v is not UNSET}
            if model is None:
                seen["payload"] = given
                return ""
            try:
                dumped = model.model_validate(given).model_dump(mode="json", by_alias=True, exclude_unset=True)
            except ValidationError as exc:
                if all(e["type"] == "string_pattern_mismatch" for e in exc.errors()):
                    seen["payload"] = sample
                    return ""
                fail(f"{where}: a payload the schema allows is refused: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}")
            seen["payload"] = dumped
            return ""
        def model_error(message):
            fail(f"{where}: {message}")
        adapter._call_tool = record
        adapter._model_error = model_error
        try:
            method(adapter, **sample)
        except SystemExit:
            raise
        except Exception as exc:
            fail(f"{where}: calling it with a valid payload failed: {type(exc).__name__}: {exc}")
        for key, value in seen.get("payload", {}).items():
            if key in sample and json.dumps(value, sort_keys=True) != json.dumps(sample[key], sort_keys=True) and value != sample[key]:
                fail(f"{where}: parameter {key!r} would reach the server as {value!r}, not {sample[key]!r}")

for job in json.loads(sys.stdin.read()):
    run(job)
"""
