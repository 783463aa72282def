"""`python -m bench.torchrun [--reps N]`: a two-rank `torchrun` GRPO step, whole wall, orlgen's
generated module against TRL's binder (`trl.experimental.openreward.OpenRewardSpec`).

Each sample is one `torchrun --standalone --nproc_per_node 2` run timed from its launch to its
exit: interpreters, imports (TRL's binder imports the `openreward` SDK, orlgen's runtime does
not), the dataset, tool discovery (TRL's opens a session; the module has its snapshot), one GRPO
step of 8 generations of one task (4 rows per rank, CPU, gloo, the tiny random Qwen3 of
`tests/support/models/tiny_qwen3.py`, built once before the runs) against `examples.echo` served
on loopback, and the sessions' deletion. The sides alternate in pairs whose order flips; the
median of each and their ratio go to stdout and `bench/torchrun-results.json`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import QUIET_ENV, REPO, child_env, log, median, versions, write_json

RESULTS = REPO / "bench" / "torchrun-results.json"
SIDES = ("orlgen", "trl")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
GENERATIONS, PER_DEVICE, TASKS = 8, 4, 8


def rank(side: str, url: str, model_dir: str, out: str) -> None:
    """One rank of one run (what `torchrun` starts): a GRPO step through `side`'s binder."""
    import torch
    import torch.distributed as dist

    from tests.support.training import grpo_trainer

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    if side == "orlgen":
        from generated import echo

        factory: Any = functools.partial(echo.EchoEnv, base_url=url)
        dataset, rewards = echo.build_dataset(num_tasks=TASKS), echo.reward_funcs
    else:
        from bench.trl_side import open_reward_spec

        spec = open_reward_spec()(url, num_tasks=TASKS)
        factory, dataset, rewards = spec.environment_factory, spec.train_dataset, [spec.reward_funcs]
    trainer = grpo_trainer(
        Path(out) / f"{side}{dist.get_rank()}",
        model=model_dir,
        environment_factory=factory,
        train_dataset=dataset,
        reward_funcs=rewards,
        per_device_train_batch_size=PER_DEVICE,
        num_generations=GENERATIONS,
        max_completion_length=8,
        max_tool_calling_iterations=1,
    )
    trainer.train()
    dist.barrier()
    dist.destroy_process_group()


def run(side: str, url: str, model_dir: Path, out: Path) -> float:
    """The wall of one two-rank run of `side`, launch to exit."""
    env = child_env(OMP_NUM_THREADS="1")
    if side == "trl":  # TRL's addressing of a single-host server (bench.trl_side.trl_addressing)
        env.update(OPENREWARD_SESSION_URL=url, OPENREWARD_API_URL=url)
    started = time.perf_counter()
    done = subprocess.run(
        [*TORCHRUN, "-m", "bench.torchrun", "--rank", side, url, str(model_dir), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"torchrun ({side}) failed:\n{done.stderr[-3000:]}")
    return seconds


def measure(reps: int) -> dict[str, Any]:
    from orlgen.serve import ServerProcess

    from bench.common import child_environ
    from tests.support.models.tiny_qwen3 import build_tiny_qwen3

    samples: dict[str, list[float]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="bench-torchrun-") as tmp:
        model_dir = build_tiny_qwen3(Path(tmp) / "model")
        with child_environ(), ServerProcess("examples.echo:Echo") as server:
            for side in SIDES:  # page cache and bytecode, once each
                run(side, server.url, model_dir, Path(tmp))
            for i in range(reps):
                for side in SIDES if i % 2 == 0 else SIDES[::-1]:
                    samples[side].append(run(side, server.url, model_dir, Path(tmp)))
                    log(f"{side}: {samples[side][-1]:.2f} s")
    found: dict[str, Any] = {f"{side}_s": median(samples[side]) for side in SIDES}
    found["ratio"] = found["orlgen_s"] / found["trl_s"]
    return {**found, "samples": samples, "reps": reps, "versions": versions()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.torchrun", description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="alternating pairs (default 3)")
    parser.add_argument("--rank", nargs=4, metavar=("SIDE", "URL", "MODEL", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rank:
        os.environ.update(QUIET_ENV)
        rank(*args.rank)
        return
    found = measure(args.reps)
    write_json(RESULTS, found)
    print(
        f"two-rank torchrun GRPO step, whole wall: orlgen {found['orlgen_s']:.2f} s, "
        f"TRL's binder {found['trl_s']:.2f} s, ratio {found['ratio']:.2f}"
    )
    print(json.dumps(found["samples"]))


if __name__ == "__main__":
    main()
