"""The verifier's child program (`python -I -m orlgen.render.verify_child`, started by `orlgen.render.verify`).

It reads the jobs from stdin (`[{"name", "file", "samples", "shown"}]`: a module's display name, the
temp file holding its source, a valid payload per tool, the name the model is shown per tool),
imports each module, and for every tool checks that a method carries the name the model is
shown (its wire name unless that misleads: `planner.tool_names`), that `transformers.utils.get_json_schema`
reads the method as TRL will, and that calling it with the payload hands the payload to the
wire unchanged. It exits 1 with one line naming what failed, 0 when every module passes.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from orlgen.plan.json_schema import JsonSchema, json_schema_reader
from pydantic import BaseModel, ValidationError


def fail(message: object) -> NoReturn:
    print(" ".join(str(message).split())[:500])
    sys.exit(1)


def run(job: dict[str, Any], get_json_schema: JsonSchema | None) -> None:
    module = _import(job)
    from orlgen.runtime import EnvAdapter
    from orlgen.runtime.trl.tools import tool_methods

    classes = list(
        {c for c in vars(module).values() if isinstance(c, type) and issubclass(c, EnvAdapter) and c is not EnvAdapter}
    )
    if len(classes) != 1:
        fail(f"{job['name']}: expected one adapter class, found {len(classes)}")
    cls = classes[0]
    shown = job["shown"]  # wire name → the name the model is shown
    methods = {m.__name__: m for m in tool_methods(cls)}  # the tools TRL shows, by the name the model sees
    for wire in module.TOOLS:
        where = f"{job['name']}: tool {wire!r}"
        method = methods.get(shown.get(wire, wire))
        if method is None:
            fail(f"{where}: no method carries the name {shown.get(wire, wire)!r}")
        if get_json_schema is not None:
            _described(where, shown.get(wire, wire), method, get_json_schema)
        _call(where, cls, method, job["samples"].get(wire, {}))


def _import(job: dict[str, Any]) -> ModuleType:
    spec = importlib.util.spec_from_file_location("orlgen_verify_" + str(abs(hash(job["file"]))), job["file"])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves postponed annotations through it
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        fail(f"{job['name']}: does not import: {type(exc).__name__}: {exc}")
    return module


def _described(where: str, wire: str, method: Callable[..., Any], get_json_schema: JsonSchema) -> None:
    try:
        described = get_json_schema(method)["function"]
    except Exception as exc:
        fail(f"{where}: get_json_schema cannot read the method: {exc}")
    if described["name"] != wire:
        fail(f"{where}: get_json_schema names it {described['name']!r}")


def _call(where: str, cls: Any, method: Callable[..., Any], sample: dict[str, Any]) -> None:
    """Call the method with `sample` on an adapter whose wire records what would be sent."""
    from orlgen.runtime import UNSET

    seen: dict[str, Any] = {}
    adapter = cls.__new__(cls)  # no session: the wire is `record`

    def record(name: str, model: type[BaseModel] | None, arguments: dict[str, Any]) -> str:
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
            first = exc.errors()[0]
            fail(f"{where}: a payload the schema allows is refused: {first['msg']} at {first['loc']}")
        seen["payload"] = dumped
        return ""

    def model_error(message: str) -> NoReturn:
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
        if key in sample and _json(value) != _json(sample[key]) and value != sample[key]:
            fail(f"{where}: parameter {key!r} would reach the server as {value!r}, not {sample[key]!r}")


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def main() -> None:
    get_json_schema = json_schema_reader()  # while the parent still renders the modules
    for job in json.loads(sys.stdin.read()):
        run(job, get_json_schema)


if __name__ == "__main__":
    main()
