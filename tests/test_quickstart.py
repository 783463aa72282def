"""The README's quickstart, run as written: the generated adapter of a `module:Class` target is the
zero-argument `environment_factory` of a real `GRPOTrainer`, which trains one step.

Only what a CPU test cannot have is swapped: the model (the offline tiny Qwen3 of
`tests/support/models/tiny_qwen3.py` instead of `Qwen/Qwen3-0.6B`) and the config's size (one step, short
completions, no checkpoint). The environment is served by the adapter itself: no URL anywhere.
"""

from __future__ import annotations

import os
import re

import pytest

from tests.support.models.tiny_qwen3 import tiny_qwen3_dir
from tests.support.modules import REPO
from tests.support.training import ONE_STEP

pytestmark = pytest.mark.slow  # a GRPO step from the README


def small(out) -> str:
    """The one-step config of the TRL tests, smaller still, as keyword arguments in source."""
    settings = {**ONE_STEP, "per_device_train_batch_size": 2, "max_completion_length": 8, "output_dir": str(out)}
    del settings["max_tool_calling_iterations"]  # the README's own is kept
    return ", ".join(f"{name}={value!r}" for name, value in settings.items())


def quickstart() -> str:
    """The README's Python block that builds a trainer."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return next(block for block in blocks if "GRPOTrainer(" in block)


@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_readme_quickstart_trains_one_step(tmp_path, monkeypatch):
    code = quickstart()
    assert "environment_factory=HelpdeskEnv," in code  # the class itself, no arguments
    for name in [name for name in os.environ if name.startswith("ORLGEN_")]:
        monkeypatch.delenv(name)
    model = 'model="Qwen/Qwen3-0.6B",'
    config = "GRPOConfig(max_tool_calling_iterations=10)"
    assert model in code and config in code
    code = code.replace(model, f"model={str(tiny_qwen3_dir())!r},")
    code = code.replace(config, f"GRPOConfig(max_tool_calling_iterations=10, {small(tmp_path)})")
    scope: dict = {}
    exec(compile(code, "README.md quickstart", "exec"), scope)  # the local server's log goes at exit

    trainer = scope["trainer"]
    assert trainer.state.global_step == 1
    assert trainer.state.log_history[0]["num_tokens"] > 0
    assert scope["HelpdeskEnv"].spec.target.kind == "module"
