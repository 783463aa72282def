"""One GRPO step on two ranks: `torchrun --nproc_per_node 2 tests/support/two_ranks.py URL OUT_DIR`.

Each rank trains the tiny random Qwen3 of `tests/support/models/tiny_qwen3.py` (built by rank 0, loaded by
both) with the checked-in echo module against the ORS server at URL, `num_generations=8` and 4
rows per device, under the session budget of its environment (`ORLGEN_MAX_SESSIONS`) and with
rank-aware prefetch. It writes `OUT_DIR/rank<N>.json`: the task of each `reset` it made (TRL's
per-rank slicing), its share of the budget and the most slots it held at once, the sessions
still held, and the metrics the trainer logged.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

GENERATIONS = 8
PER_DEVICE = 4


def main(url: str, out: Path) -> None:
    import torch
    import torch.distributed as dist
    from orlgen.runtime import admission, budget, prefetch, scoring_callback
    from transformers.utils import logging as hf_logging

    from tests.support.models.tiny_qwen3 import build_tiny_qwen3
    from tests.support.modules import load_module
    from tests.support.training import grpo_trainer

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    model_dir = out / "model"
    if rank == 0:
        build_tiny_qwen3(model_dir)
    dist.barrier()

    echo = load_module(REPO / "generated" / "echo.py")
    resets: list[int] = []

    class CountedEchoEnv(echo.EchoEnv):
        def reset(self, **row):
            resets.append(int(row["task_index"]))
            return super().reset(**row)

    rows = prefetch.rows_per_process(GENERATIONS, PER_DEVICE)
    adapters: list = []

    def factory():
        adapters.append(CountedEchoEnv(base_url=url, prefetch=rows))
        return adapters[-1]

    trainer = grpo_trainer(
        out / f"trainer{rank}",
        model=str(model_dir),
        environment_factory=factory,
        train_dataset=echo.build_dataset(num_tasks=8),
        reward_funcs=echo.reward_funcs,
        per_device_train_batch_size=PER_DEVICE,
        num_generations=GENERATIONS,
        max_completion_length=8,
        max_tool_calling_iterations=1,
    )
    trainer.add_callback(scoring_callback(trainer))
    trainer.train()
    slots = budget.for_env(admission.env_key(adapters[0]._connection), CountedEchoEnv)
    result = {
        "rank": rank,
        "resets": resets,
        "share": slots.slots,
        "peak": slots.peak,
        "held": sum(len(adapter._session_slot) for adapter in adapters),
        "logged": trainer.state.log_history[0],
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
