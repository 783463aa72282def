"""The verifiers 0.4 trainer: `<name>_verifiers.py`, a taskset `vf-eval` finds by its dotted name.

The module holds what is particular to its environment (its spec, its params models, one `@tool`
method per ORS tool) over the shared machinery of `orlgen.runtime.verifiers`. What the model sees
of a tool is its MCP schema, which the MCP SDK derives from the method's signature: `tool` gives
each method the fields of its params model (the models datamodel-code-generator writes for every
trainer), so the schema keeps the author's words, bounds, enums, defaults and nested models; the
tool's description is the author's prose, its returns and raises, and for a task-only tool the
tasks that offer it, with no `Args:` section (verifiers does not parse one: TRAINERS.md §2.1):
each parameter's line of it is that parameter's description in the schema instead.

No mixture: verifiers mixes environments itself (one taskset per env, several envs per run), so a
verifiers module is one env.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orlgen.plan.planner import ModulePlan, ToolPlan
from orlgen.plan.reserved import VERIFIERS_IMPORTS
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import Source, docstring_literal, literal
from orlgen.trainers import Trainer, module_suffix


def context(plan: ModulePlan) -> dict[str, object]:
    """`plan` for the verifiers template: the neutral plan's fields, and the verifiers layout."""
    fields = {field.name: getattr(plan, field.name) for field in dataclasses.fields(plan)}
    stem = plan.env_class.removesuffix("Env")
    classes = {"toolset_class": f"{stem}Toolset", "task": f"{stem}Task", "taskset": f"{stem}Taskset"}
    laid_out = {
        **fields,
        **classes,
        "tools": [
            {
                **_fields(tool),
                "method": toolset_method(tool),
                "description": tool_description(tool),
                "described": described(tool),
            }
            for tool in plan.tools
        ],
        "description": module_docstring(plan),
        "exports": literal(dunder_all_order(["SNAPSHOT_SHA256", "SPEC", "SPLITS", "TARGET", *classes.values()])),
        "name_literal": literal(plan.env_class),
    }
    return {"plan": laid_out}


def toolset_method(tool: ToolPlan) -> str:
    """The tool's method in the Toolset class body: `ors_` + the plan's method name. A Toolset's
    own API (`run`, `setup`, `state`, the shim's `call`) and the module's `tool` decorator are
    names a tool may well have; prefixed, no tool method can replace them, and the plan's names
    stay TRL's (`orlgen.plan.reserved`). The model is shown the tool's shown name (`@tool(...)`)."""
    return f"ors_{tool.method}"


def _fields(tool: ToolPlan) -> dict[str, object]:
    return {field.name: getattr(tool, field.name) for field in dataclasses.fields(tool)}


def module_docstring(plan: ModulePlan) -> Source:
    run = (
        "Evaluate with `vf-eval <package>.<this module> --env.agent.runtime.type subprocess ...`\n"
        "(docs/trainers-verifiers.md); the tool servers reach the env at TARGET or the URL in\n"
        f"{plan.env_var_name}."
    )
    return docstring_literal(
        f"verifiers 0.4 taskset for the ORS environment {plan.target_value!r}.\n\n{plan.facts}\n\n{run}", ""
    )


def described(tool: ToolPlan) -> Source:
    """{wire name: description} for the tool's parameters, a dict literal: each parameter's one
    line as the TRL module's `Args:` shows it (the author's words, then the structure, limits,
    default and examples a hint cannot show), so the verifiers model reads what the TRL model
    reads even of an env documented only in `Args:` (its schema has no descriptions)."""
    return Source("{" + ", ".join(f"{param.wire}: {literal(param.doc)}" for param in tool.params) + "}")


def tool_description(tool: ToolPlan) -> Source:
    """What the model reads of a tool beside its schema (`ToolPlan.description`), as the
    method's docstring."""
    return docstring_literal(tool.description(), indent="        ")


TRAINER = Trainer(
    name="verifiers",
    suffix=module_suffix("verifiers"),
    written_for="verifiers>=0.4,<0.5",
    templates=Path(__file__).resolve().parent / "templates",
    module_template="verifiers_module.py.jinja",
    mixture_template=None,
    context=context,
    imports=VERIFIERS_IMPORTS,
)
