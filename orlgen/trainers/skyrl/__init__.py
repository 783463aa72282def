"""The skyrl-gym 0.4 trainer: `<name>_skyrl.py`, a `BaseTextEnv` subclass (one ORS session per
episode, `orlgen.runtime.skyrl.OrsTextEnv`), `register()` and a `build_dataset()` in SkyRL's
dataset shape.

skyrl-gym has no tool-schema channel: the module carries the system prompt that shows the model
the tools (`orlgen.trainers.skyrl.prompt`: TRL's schemas, in Qwen's `<tools>` layout) and the
table the shim parses `<tool_call>` blocks against. No mixture: SkyRL already mixes environments
by the `env_class` column of one dataset (concatenate the modules' `build_dataset()` rows and
`register()` each module).
"""

from __future__ import annotations

from pathlib import Path

from orlgen.plan.reserved import SKYRL_IMPORTS
from orlgen.trainers import Trainer, module_suffix
from orlgen.trainers.skyrl.layout import context

TRAINER = Trainer(
    name="skyrl",
    suffix=module_suffix("skyrl"),
    written_for="skyrl-gym>=0.4,<0.5",
    templates=Path(__file__).resolve().parent / "templates",
    module_template="skyrl_module.py.jinja",
    mixture_template=None,
    context=context,
    imports=SKYRL_IMPORTS,
)
