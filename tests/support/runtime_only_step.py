"""One GRPO step on the checked-in `generated/echo.py`, run by `tests/test_runtime_install.py` in a
venv that holds the runtime alone: `python runtime_only_step.py MODEL_DIR OUT_DIR BASE_URL`.

The env is served on the loopback `BASE_URL` by another process (the venv has no ORS server: the
openreward SDK is not installed). The working directory holds copies of `generated/` and
`examples/` only, so `orlgen` can come from nowhere but the installed wheel. Prints one JSON
line: where `orlgen` came from, the step count, the tokens trained on, which `orlgen` modules
the run imported, and whether anything imported `openreward`.
"""

from __future__ import annotations

import json
import sys


def main(model: str, out: str, base_url: str) -> None:
    import functools

    import orlgen
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from generated.echo import EchoEnv, build_dataset, reward_funcs

    torch.set_num_threads(1)  # a model this small runs several times faster on one thread
    config = GRPOConfig(
        max_tool_calling_iterations=2,
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=8,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
        output_dir=out,
    )
    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=build_dataset("train", num_tasks=2),
        environment_factory=functools.partial(EchoEnv, base_url=base_url),
        reward_funcs=reward_funcs,
    )
    trainer.train()
    result = {
        "orlgen": orlgen.__file__,
        "steps": trainer.state.global_step,
        "tokens": trainer.state.log_history[0]["num_tokens"],
        "modules": sorted(name for name in sys.modules if name == "orlgen" or name.startswith("orlgen.")),
        "openreward_imported": any(name.partition(".")[0] == "openreward" for name in sys.modules),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
