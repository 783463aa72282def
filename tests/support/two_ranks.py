"""Two ranks against one env: `torchrun --nproc_per_node 2 tests/support/two_ranks.py [--shared] URL OUT_DIR`.

`--shared`: no trainer, uneven ranks sharing one session cap through the job's store
(`shared_cap`). Without it, one GRPO step:

Each rank trains the tiny random Qwen3 of `tests/support/models/tiny_qwen3.py` (built by rank 0, loaded by
both) with the checked-in echo module against the ORS server at URL, `num_generations=8` and 4
rows per device, under the session budget of its environment (`ORLGEN_MAX_SESSIONS`) and with
rank-aware prefetch. It writes `OUT_DIR/rank<N>.json`: the task of each `reset` it made (TRL's
per-rank slicing), its budget (the run's, shared through the job's store), the most slots it
held at once, the sessions still held, and the metrics the trainer logged.
"""

from __future__ import annotations

import json
import os
import sys
import time
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
    from orlgen.runtime import scoring_metrics
    from orlgen.runtime.session import admission, budget, prefetch
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
        reward_funcs=[*echo.reward_funcs, scoring_metrics],  # orlgen's metrics, summed over both ranks
        per_device_train_batch_size=PER_DEVICE,
        num_generations=GENERATIONS,
        max_completion_length=8,
        max_tool_calling_iterations=1,
    )
    trainer.train()
    slots = budget.for_env(admission.env_key(adapters[0]._episode.connection), CountedEchoEnv)
    result = {
        "rank": rank,
        "resets": resets,
        "share": slots.slots,
        "shared": slots.shared,
        "peak": slots.peak,
        "held": sum(int(adapter._episode.open) for adapter in adapters),
        "logged": trainer.state.log_history[0],
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


HOLD_S = 0.3  # a rollout's session stays open this long (the model generating)


def shared_cap(url: str, out: Path) -> None:
    """Uneven ranks under one cap kept in the job's `torch.distributed` store (gloo):
    1. `ORLGEN_MAX_SESSIONS=3` for the run: rank 0 plays 12 rollouts at once, rank 1 two. Each
       rank may hold the whole budget while the other leaves it free (the per-rank share was 2
       and 1);
    2. no budget, the env at 4 sessions: rank 0 plays 12 rollouts at once and learns the env's
       capacity from its refusals; then rank 1 plays 8, queued behind the capacity rank 0 learned.
    Writes `OUT_DIR/shared<N>.json`: each phase's peak slots held and rewards, the server's counts
    around rank 1's second phase, and the window each rank saw."""
    from concurrent.futures import ThreadPoolExecutor

    import torch.distributed as dist
    from orlgen.runtime.session import admission, budget

    from tests.support.modules import load_module
    from tests.support.servers.capacity import post, stats

    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    echo = load_module(REPO / "generated" / "echo.py")
    key = admission.env_key(echo.EchoEnv(base_url=url)._episode.connection)

    def play(count: int) -> tuple[list, int]:
        budget.forget()
        envs = [echo.EchoEnv(base_url=url, timeout=60.0) for _ in range(count)]
        with ThreadPoolExecutor(max(1, count)) as pool:
            rewards = list(pool.map(_rollout, envs))
        return rewards, budget.for_env(key, echo.EchoEnv).peak

    result: dict = {"rank": rank}
    budget.set_max_sessions(3)
    play(1)  # warm: the first reset of a process imports the client
    dist.barrier()
    result["configured"] = play([12, 2][rank])
    result["shared"] = budget.for_env(key, echo.EchoEnv).shared
    budget.set_max_sessions(None)
    dist.barrier()
    if rank == 0:
        result["stats_configured"] = stats(url)
        post(url, "/_fault/clear")
        post(url, "/_fault/capacity?n=4&retry_after=0")  # the SDK's own retries take no time
        result["learned"] = play(12)
    dist.barrier()
    if rank == 1:
        budget.forget()
        result["window_before"] = budget.for_env(key, echo.EchoEnv).window
        result["stats_before"] = stats(url)
        result["learned"] = play(8)
        result["stats_after"] = stats(url)
    dist.barrier()
    (out / f"shared{rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group()


def _rollout(env) -> float | None:
    env.reset(task_index=0)
    time.sleep(HOLD_S)
    env.echo(text="hello")
    return env.get_reward()


if __name__ == "__main__":
    if sys.argv[1] == "--shared":
        shared_cap(sys.argv[2], Path(sys.argv[3]))
    else:
        main(sys.argv[1], Path(sys.argv[2]))
