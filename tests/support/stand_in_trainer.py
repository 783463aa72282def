"""A stand-in for a trainer whose package is not built yet (`verifiers`, `skyrl`): one trivial
template over the neutral plan, registered under the trainer's name in place of its stub package.

A fake for the registry's lazy import only, for the tests of what every trainer shares (file
names, headers, the cache key, `check`, orphans, `--trainer`); the plan, the render, the sandbox,
black, `check` and the cache that run over it are the real ones. The template reads the fields a
trainer reads from the neutral plan (names, shown names, hints, defaults, and each tool's
fingerprint of its description and schema), so a change of their order or content shows in its bytes.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from orlgen.trainers import Trainer, module_suffix

TEMPLATE = """\
{#- A stand-in trainer's module: the neutral plan's tools as data. #}
{{ imports }}

ENV_CLASS = "{{ plan.env_class }}"
TARGET = {{ plan.target.value }}
TOOLS = {
{% for tool in plan.tools %}
    {{ tool.wire }}: {
        "method": "{{ tool.method }}",
        "shown": {{ tool.shown }},
        "fingerprint": {{ tool.fingerprint }},
        "params": [
{% for p in tool.params %}
            ({{ p.wire }}, "{{ p.name }}", {{ p.hint }}, {{ p.default }}),
{% endfor %}
        ],
    },
{% endfor %}
}
"""


def install(monkeypatch: pytest.MonkeyPatch, name: str, directory: Path) -> Trainer:
    """Register the stand-in as trainer `name` for this test; its template is written to `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    template = f"{name}_module.py.jinja"
    (directory / template).write_text(TEMPLATE)
    trainer = Trainer(
        name=name,
        suffix=module_suffix(name),
        written_for=f"{name}==0.4.0",
        templates=directory,
        module_template=template,
        mixture_template=None,  # renders no mixture: the mixture tests need one that does not
        context=lambda plan: {"plan": plan},
        imports={},
    )
    package = types.ModuleType(f"orlgen.trainers.{name}")
    package.TRAINER = trainer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, f"orlgen.trainers.{name}", package)
    return trainer
