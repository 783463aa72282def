"""The `echo` trainer: `<env>_echo.py`, each tool of the env with the names of its parameters,
as plain data. It shows the whole contract of a trainer plugin: a `Trainer` named by an entry
point, a context built from the plan (`orlgen.plan.planner.ModulePlan`, whose fields
docs/plugins.md describes) and a template that renders in orlgen's sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orlgen.trainers import Trainer, module_suffix

if TYPE_CHECKING:
    from orlgen.plan.planner import ModulePlan

# The plan versions this plugin reads; a newer plan changed a field's meaning (docs/plugins.md).
PLAN_VERSIONS = (3,)


def context(plan: ModulePlan) -> dict[str, object]:
    """What the template reads: only literals the plan escaped already (`Source` fields:
    `target.value`, each tool's and parameter's `wire`), so no server text is pasted raw."""
    if plan.version not in PLAN_VERSIONS:
        raise ValueError(f"plan version {plan.version} is not one of {PLAN_VERSIONS}: upgrade orlgen-echo-trainer")
    return {
        "target": plan.target.value,
        "tools": [
            {
                "wire": tool.wire,
                "params": [param.wire for param in tool.params],
            }
            for tool in plan.tools
        ],
    }


TRAINER = Trainer(
    name="echo",
    suffix=module_suffix("echo"),
    written_for="orlgen-echo-trainer>=0.1,<1",
    templates=Path(__file__).resolve().parent / "templates",
    module_template="echo_module.py.jinja",
    mixture_template=None,
    context=context,
    imports={},
)
