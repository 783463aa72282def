"""TRL's part of a module: the neutral plan laid out for GRPOTrainer and `get_json_schema`.

TRL shows the model the JSON schema `transformers.utils.get_json_schema` reads off each tool
method: its hints and a Google-style docstring (`Args:`, `Returns:`), whose prose must not
trip that parser (`orlgen.plan.docstrings.safe`). The context is the plan itself, as the
templates have always read it (`plan.tools[i].docstring`, `plan.exports`, `plan.description`),
with those three added.
"""

from __future__ import annotations

import dataclasses

from orlgen.names import ClassName
from orlgen.plan import docstrings
from orlgen.plan.planner import ModulePlan, ToolPlan
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import Source, docstring_literal, literal

# What every TRL module exports beside its adapter class and params models.
_EXPORTS = (
    "SNAPSHOT_SHA256",
    "SPEC",
    "SPLITS",
    "TARGET",
    "TOOLS",
    "build_dataset",
    "environment_factory",
    "outcome_reward",
    "reward_funcs",
    "summed_reward",
)


def context(plan: ModulePlan) -> dict[str, object]:
    """`plan` for the TRL templates: the neutral plan's fields, and TRL's layout beside them."""
    fields = {field.name: getattr(plan, field.name) for field in dataclasses.fields(plan)}
    tools = [{**_fields(tool), "docstring": tool_docstring(tool)} for tool in plan.tools]
    laid_out = {
        **fields,
        "tools": tools,
        "description": module_docstring(plan),
        "exports": exports(plan.env_class, plan.tools, plan.has_terminal_tool, plan.score_group),
    }
    return {"plan": laid_out}


def _fields(tool: ToolPlan) -> dict[str, object]:
    return {field.name: getattr(tool, field.name) for field in dataclasses.fields(tool)}


def module_docstring(plan: ModulePlan) -> Source:
    return docstring_literal(f"Typed TRL adapter for the ORS environment {plan.target_value!r}.\n\n{plan.facts}", "")


def exports(env_class: ClassName, tools: tuple[ToolPlan, ...], terminal: bool, group: bool = False) -> Source:
    """`__all__`, sorted as ruff's RUF022 sorts it (see `orlgen.plan.sorting`); `group_reward`
    (imported from the runtime because it is exported) for an env that scores groups."""
    exported = [env_class, *(tool.params_class for tool in tools if tool.params_class), *_EXPORTS]
    exported += ["submit_final_message"] if terminal else []
    exported += ["group_reward"] if group else []
    return literal(dunder_all_order(exported))


def tool_docstring(tool: ToolPlan) -> Source:
    """The method's docstring literal: `tool_docstring_text`, indented under the method."""
    return docstring_literal(tool_docstring_text(tool), indent="        ")


def tool_docstring_text(tool: ToolPlan) -> str:
    """The method's docstring as text, as `get_json_schema` reads it (the skyrl trainer hands the
    same text to it). An `Args:` entry that names no parameter of the schema (an argument the
    server reads some other way, or a stale one) stays in the description, where the model can
    still read it, since `Args:` may only list the method's parameters."""
    safe = docstrings.safe
    summary = safe(tool.summary)
    if tool.offer:
        summary += f"\n\n{safe(tool.offer)}"
    if tool.unmatched:
        entries = (safe(docstrings.one_line(f"{name}: {text}")) for name, text in tool.unmatched)
        summary += "\n\nAlso documented, though not a parameter in the tool's schema:\n" + "\n".join(entries)
    if tool.raises:
        summary += f"\n\nFails with {safe(tool.raises)}"
    lines = summary.split("\n")
    if tool.params:
        lines += ["", "Args:"] + [f"    {param.name}: {safe(param.doc)}" for param in tool.params]
    if tool.returns:
        lines += ["", "Returns:", f"    {safe(tool.returns)}"]
    return "\n".join(lines)
