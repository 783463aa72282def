"""The model's view: the function JSON each binder shows the model, and its size in characters."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.fidelity.schema_walk import JSON
from bench.fidelity.sets import Group, ToolSchema
from bench.loading import load_module
from bench.trl_side import environment_module, listed, quiet_binder, rollout_class

# ── prompt size ──────────────────────────────────────────────────────────────


def prompt_chars(functions: list[JSON]) -> int:
    """Characters of the tools JSON the model is shown: each `get_json_schema(...)["function"]`
    wrapped and dumped as the chat template's `tojson` does (`json.dumps`, non-ASCII kept)."""
    return sum(len(json.dumps({"type": "function", "function": f}, ensure_ascii=False)) for f in functions)


def raw_prompt_chars(tools: list[Any]) -> int:
    """The same measure for the server's raw schemas, shown as they are: name, description,
    `input_schema` as the parameters (an empty object schema for a tool without parameters)."""
    return prompt_chars(
        [
            {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema or {"type": "object", "properties": {}},
            }
            for t in tools
        ]
    )


# ── the model's view ─────────────────────────────────────────────────────────


@dataclass
class View:
    """What one binder shows the model for one group: wire name → function JSON, or why not."""

    functions: dict[str, JSON] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # wire name → reason
    extra: list[str] = field(default_factory=list)  # functions shown that are no tool of the group
    # The functions exactly as sent, where `functions` holds them as read (the agent module's:
    # `$ref`s read through); for the prompt size. Empty: `functions` are as sent.
    sent: list[JSON] = field(default_factory=list)

    def prompt_chars(self) -> int:
        return prompt_chars(self.sent or list(self.functions.values()))


def _get_schema(fn: Any) -> JSON:
    from transformers.utils import get_json_schema

    return get_json_schema(fn)["function"]


def _minimal_snapshot(group: Group) -> Any:
    from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Tool

    return Snapshot(
        name=f"fidelity_{group.name}",
        target=Target(kind="module", value=f"bench.fidelity:{group.name}", env=group.name),
        splits=[Split(name="train", num_tasks=1)],
        tools=[
            Tool(name=t.name, description=t.description, input_schema=t.input_schema, shared=t.shared)
            for t in group.tools
        ],
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="none", tasks=[])},
        task_schema={"properties": {"target": {"type": "string"}}, "required": ["target"], "type": "object"},
    ).canonical()


_module_counter = itertools.count()


def orlgen_view(group: Group, workdir: Path) -> View:
    from orlgen.render.jobs import render_module
    from orlgen.runtime.trl.adapter import EnvAdapter

    view = View()
    try:
        snapshot = group.snapshot or _minimal_snapshot(group)
        module = import_source(render_module(snapshot), workdir, group.name)
    except Exception as exc:  # any failure loses the whole group
        view.missing = {t.name: f"render/import failed: {_short(exc)}" for t in group.tools}
        return view
    (env_class,) = dict.fromkeys(
        v
        for v in vars(module).values()  # also bound as `environment_factory`
        if inspect.isclass(v) and issubclass(v, EnvAdapter) and v is not EnvAdapter
    )
    _collect(view, group, inspect.getmembers(env_class, inspect.isfunction))
    return view


def agent_view(group: Group, workdir: Path) -> View:
    """What the agent module of the group's snapshot shows the model: each function of its
    `TOOLS` (name, description, parameters: the sanitised JSON Schema, `$defs` included), keyed by
    the wire name `CALLS` maps its name to. The classifier reads inline schemas (as
    `get_json_schema` writes them), so each `$ref` is read through to the definition the same
    `parameters` carry (`bench.trainers.inline_refs`, as for verifiers' MCP schemas); the prompt
    size counts the functions as sent (`View.sent`)."""
    from orlgen.render.jobs import render_module

    from bench.trainers import inline_refs  # here: bench.trainers imports this module

    view = View()
    try:
        snapshot = group.snapshot or _minimal_snapshot(group)
        module = import_source(render_module(snapshot, trainer_name="agent"), workdir, f"{group.name}_agent")
    except Exception as exc:  # any failure loses the whole group
        view.missing = {t.name: f"render/import failed: {_short(exc)}" for t in group.tools}
        return view
    wanted = {t.name for t in group.tools}
    for tool in module.TOOLS:
        function = tool["function"]
        call = module.CALLS.get(function["name"])
        wire = call.wire if call is not None else function["name"]
        view.sent.append(function)
        if wire not in wanted:
            view.extra.append(function["name"])
            continue
        view.functions[wire] = {**function, "parameters": inline_refs(function.get("parameters") or {})}
    for tool in group.tools:
        if tool.name not in view.functions:
            view.missing[tool.name] = "not in TOOLS"
    return view


def verl_view(group: Group) -> View:
    """What verl shows the model for the group's snapshot: each function of the verl trainer's
    tool YAML (`<env>_verl_tools.yaml`, rendered by `orlgen.render.jobs.render_extra`), keyed by
    the wire name the verl module's `CALLS` maps its name to. verl loads each entry's schema into
    its `OpenAIFunctionToolSchema`, which keeps of a property only `type`, `description` and
    `enum`, and hands the chat template `model_dump(exclude_unset=True, exclude_none=True)`; the
    YAML holds exactly those keys, so that dump is the YAML's function as written (verl is not
    installed here: nothing of it runs). `CALLS` is read from the rendered module's source, not
    imported (the module imports verl). verl's schemas are flat (no `$ref`, no `$defs`): the
    prompt size counts them as they are."""
    from orlgen.render.jobs import PlannedEnv, render_extra, render_module
    from orlgen.trainers import trainer

    view = View()
    try:
        snapshot = group.snapshot or _minimal_snapshot(group)
        planned = PlannedEnv(snapshot)
        (extra,) = trainer("verl").extra_files
        entries = yaml.safe_load(render_extra(snapshot, "verl", extra, planned))["tools"]
        wires = _verl_calls(render_module(snapshot, trainer_name="verl", planned=planned))
    except Exception as exc:  # any failure loses the whole group
        view.missing = {t.name: f"render failed: {_short(exc)}" for t in group.tools}
        return view
    wanted = {t.name for t in group.tools}
    for entry in entries:
        function = entry["tool_schema"]["function"]
        wire = wires.get(function["name"], function["name"])
        view.sent.append(function)
        if wire not in wanted:
            view.extra.append(function["name"])
            continue
        view.functions[wire] = function
    for tool in group.tools:
        if tool.name not in view.functions:
            view.missing[tool.name] = "not in the tool YAML"
    return view


def _verl_calls(source: str) -> dict[str, str]:
    """The verl module's `CALLS` as {name the model calls: wire name}, from its source
    (`"name": verl.Tool("wire", Params)` entries)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CALLS" for t in node.targets):
            if not isinstance(node.value, ast.Dict):
                break
            return {
                ast.literal_eval(key): ast.literal_eval(value.args[0])
                for key, value in zip(node.value.keys, node.value.values, strict=True)
                if key is not None and isinstance(value, ast.Call) and value.args
            }
    raise ValueError("no CALLS = {...} in the verl module")


def trl_view(group: Group) -> View:
    view = View()
    cls = rollout_class(f"Fidelity_{group.name}")
    binder = environment_module()._bind_tool_method
    with quiet_binder():  # the binder warns on every skipped tool
        for tool in group.tools:
            try:
                binder(cls, listed(tool.name, tool.description, tool.input_schema))
            except Exception as exc:
                view.missing[tool.name] = f"binder raised {_short(exc)}"
                continue
            if tool.name not in vars(cls):
                view.missing[tool.name] = _skipped(tool)
    _collect(view, group, [(n, v) for n, v in vars(cls).items() if inspect.isfunction(v)])
    return view


def _skipped(tool: ToolSchema) -> str:
    """Why TRL's binder skipped a tool without raising, as far as its names tell."""
    if not tool.name.isidentifier():
        return f"binder skipped it (non-identifier tool name {tool.name!r})"
    bad = [p for p in (tool.input_schema or {}).get("properties") or {} if not p.isidentifier()]
    return f"binder skipped it (non-identifier param name {bad[0]!r})" if bad else "binder skipped it"


def _collect(view: View, group: Group, members: list[tuple[str, Any]]) -> None:
    """Public functions (TRL's rule: no `_` prefix, not `reset`/`get_reward`), keyed by `__name__`."""
    wanted = {t.name for t in group.tools}
    for attr, fn in members:
        if attr.startswith("_") or attr in ("reset", "get_reward"):
            continue
        wire = fn.__name__
        if wire not in wanted:
            view.extra.append(wire)
            continue
        try:
            view.functions[wire] = _get_schema(fn)
        except Exception as exc:
            view.missing[wire] = f"get_json_schema raised {_short(exc)}"
    for tool in group.tools:
        if tool.name not in view.functions and tool.name not in view.missing:
            view.missing[tool.name] = "no method with this __name__"


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:100]}" if text else type(exc).__name__


def import_source(source: str, workdir: Path, label: str) -> Any:
    """A generated module's source written to `workdir` and imported under a name of its own."""
    name = f"_fidelity_orlgen_{next(_module_counter)}_{label}"
    path = workdir / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return load_module(path, name, keep=False)
