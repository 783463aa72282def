"""The README's quickstart, run as written: the generated adapter of a `module:Class` target is the
zero-argument `environment_factory` of a real `GRPOTrainer`, which trains one step.

Only what a CPU test cannot have is swapped: the model (the offline tiny Qwen3 of
`tests/tiny_model.py` instead of `Qwen/Qwen3-0.6B`) and the config's size (one step, short
completions, no checkpoint). The environment is served by the adapter itself: no URL anywhere.
"""

from __future__ import annotations

import os
import re

import pytest
from conftest import REPO

from tests.tiny_model import tiny_qwen3_dir

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")

SMALL = (
    "use_cpu=True, bf16=False, activation_checkpointing=False, max_steps=1, per_device_train_batch_size=2, "
    "num_generations=2, max_completion_length=8, report_to=[], save_strategy='no', disable_tqdm=True, seed=0, "
    "output_dir={out!r}"
)


def quickstart() -> str:
    """The README's Python block that builds a trainer."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return next(block for block in blocks if "GRPOTrainer(" in block)


def test_readme_quickstart_trains_one_step(tmp_path, monkeypatch):
    import torch
    from orlgen.runtime.local import log_path

    code = quickstart()
    assert "environment_factory=HelpdeskEnv," in code  # the class itself, no arguments
    for name in [name for name in os.environ if name.startswith("ORLGEN_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model = 'model="Qwen/Qwen3-0.6B",'
    config = "GRPOConfig(max_tool_calling_iterations=10)"
    assert model in code and config in code
    code = code.replace(model, f"model={str(tiny_qwen3_dir())!r},")
    code = code.replace(config, f"GRPOConfig(max_tool_calling_iterations=10, {SMALL.format(out=str(tmp_path))})")
    scope: dict = {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs several times faster on one thread
    try:
        exec(compile(code, "README.md quickstart", "exec"), scope)
    finally:
        torch.set_num_threads(threads)
        log_path("examples.helpdesk:Helpdesk").unlink(missing_ok=True)

    trainer = scope["trainer"]
    assert trainer.state.global_step == 1
    assert trainer.state.log_history[0]["num_tokens"] > 0
    assert scope["HelpdeskEnv"].spec.target.kind == "module"
