"""The agent trainer: `<name>_agent.py`, for every trainer that hands its user an OpenAI-compatible
endpoint and asks for an episode back (AReaL, ART, Agent Lightning, slime; docs/trainers-agent.md).

The module holds `TOOLS`, the OpenAI tool definitions the model is shown: each tool's
description (the author's prose, the tasks that offer a task-only tool, what it returns and
raises) and its parameters as the snapshot's sanitised JSON Schema whole (types, enums,
bounds, defaults, nested fields and `$defs`, each parameter in the author's words), which is
what a schema channel can carry and what ART keeps on a trajectory. `CALLS` maps each shown name
to the tool's wire name and params model; `run_episode` and `build_dataset` are the runtime's
(`orlgen.runtime.agent`), bound to the env.

No mixture: these trainers take one episode function per dataset row; a user mixing envs calls
each module's `run_episode` for its own rows.
"""

from __future__ import annotations

from pathlib import Path

from orlgen.plan.planner import ModulePlan, ToolPlan
from orlgen.plan.reserved import AGENT_IMPORTS
from orlgen.plan.sorting import dunder_all_order
from orlgen.plan.source import docstring_literal, literal
from orlgen.trainers import Trainer, module_suffix

_EXPORTS = ("CALLS", "ENV", "SNAPSHOT_SHA256", "SPEC", "SPLITS", "TARGET", "TOOLS", "build_dataset", "run_episode")


def context(plan: ModulePlan) -> dict[str, object]:
    """The neutral plan, plus each tool's OpenAI definition as a literal."""
    tools = sorted(plan.tools, key=lambda tool: tool.shown_name)
    return {
        "plan": plan,
        "description": docstring_literal(_summary(plan), indent=""),
        "exports": literal(
            dunder_all_order([*_EXPORTS, *(tool.params_class for tool in plan.tools if tool.params_class)])
        ),
        "name_literal": literal(plan.env_class),
        "tools": [(literal(definition(tool)), tool) for tool in tools],
    }


def definition(tool: ToolPlan) -> dict[str, object]:
    """One tool as OpenAI's `tools` list holds it."""
    return {
        "type": "function",
        "function": {"name": tool.shown_name, "description": tool.description(), "parameters": tool.parameters},
    }


def _summary(plan: ModulePlan) -> str:
    return (
        f"Agent module for the ORS environment {plan.target_value!r}: one episode against an\n"
        "OpenAI-compatible endpoint (AReaL, ART, Agent Lightning, slime: docs/trainers-agent.md).\n\n"
        "    trajectory = await run_episode(build_dataset()[0], base_url=..., model=...)\n\n"
        f"The model is shown TOOLS; sessions reach TARGET, or the URL in {plan.env_var_name}.\n\n"
        f"{plan.facts}"
    )


TRAINER = Trainer(
    name="agent",
    suffix=module_suffix("agent"),
    written_for="openai-compatible-chat-completions",  # no framework: an API shape
    templates=Path(__file__).resolve().parent / "templates",
    module_template="agent_module.py.jinja",
    mixture_template=None,
    context=context,
    imports=AGENT_IMPORTS,
)
