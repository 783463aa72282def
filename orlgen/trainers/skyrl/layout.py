"""The skyrl trainer's template context: the neutral plan, plus what skyrl-gym's module lays out.

The model reads the tools in the system prompt (`orlgen.trainers.skyrl.prompt`), so the context
holds that prompt as one literal per line, and, per tool, the name the model calls it by. Every
name, hint and word comes from the plan, read from its plain fields (`shown_name`, `name`,
`system_text`, each parameter's `annotation`): nothing is re-derived or parsed back.
"""

from __future__ import annotations

from orlgen.plan.planner import ModulePlan
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import docstring_literal, literal
from orlgen.trainers.skyrl.prompt import prompt_pieces, shown_schema
from orlgen.trainers.trl.layout import tool_docstring_text

_EXPORTS = ("SNAPSHOT_SHA256", "SPEC", "SPLITS", "SYSTEM_PROMPT", "TARGET", "TOOLS", "build_dataset", "register")


def context(plan: ModulePlan) -> dict[str, object]:
    tools = sorted(plan.tools, key=lambda tool: tool.method)  # TRL lists a class's methods by name
    schemas = [shown_schema(tool.shown_name, tool_docstring_text(tool), tool.params) for tool in tools]
    exported = [*_EXPORTS, plan.env_class, *(tool.params_class for tool in plan.tools if tool.params_class)]
    return {
        "plan": plan,
        "description": docstring_literal(_summary(plan), indent=""),
        "exports": literal(dunder_all_order(exported)),
        "env_id": literal(plan.name),
        "prompt_pieces": [literal(piece) for piece in prompt_pieces(schemas, plan.system_text)],
        "tools": [(tool.shown, tool) for tool in tools],
    }


def _summary(plan: ModulePlan) -> str:
    return (
        f"skyrl-gym environment for the ORS environment {plan.target_value!r}: one session per episode.\n\n"
        "The model reads the tools in the system prompt (SYSTEM_PROMPT, the same schemas TRL shows)\n"
        "and calls them as <tool_call> blocks. Use: register(); build_dataset().to_parquet(path).\n\n"
        f"{plan.facts}"
    )
