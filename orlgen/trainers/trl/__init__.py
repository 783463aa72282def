"""The TRL trainer: today's module (`<name>.py`), an `EnvAdapter` subclass for GRPOTrainer's
`environment_factory`, and the mixture module that hands several of them to one trainer.

Its templates are orlgen's own `templates/` (`orlgen/templates` in a wheel), where project
overrides of `module.py.jinja`, `tool_method.py.jinja` and `mixture.py.jinja` have always been
looked up by name. Its context (`orlgen.trainers.trl.layout`) adds TRL's layout to the neutral
plan: the module docstring, `__all__`, and each tool method's docstring in the Google style
`transformers.utils.get_json_schema` reads.
"""

from __future__ import annotations

from pathlib import Path

from orlgen.plan.reserved import TRL_IMPORTS
from orlgen.trainers import Trainer, module_suffix
from orlgen.trainers.trl.layout import context


def template_dir() -> Path:
    """orlgen's own TRL templates: `orlgen/templates` in a wheel; in a source checkout that is a
    link to the top-level `templates/`, resolved here (the sandbox refuses links in a templates
    directory, and this one is orlgen's, not the project's)."""
    package = Path(__file__).resolve().parent.parent.parent
    packaged = (package / "templates").resolve()
    return packaged if packaged.is_dir() else package.parent / "templates"


TRAINER = Trainer(
    name="trl",
    suffix=module_suffix("trl"),
    written_for="trl>=1.16,<2",
    templates=template_dir(),
    module_template="module.py.jinja",
    mixture_template="mixture.py.jinja",
    context=context,
    imports=TRL_IMPORTS,
)
