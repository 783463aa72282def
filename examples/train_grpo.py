"""GRPO training on an ORS environment through its orlgen-generated module.

The generated-module counterpart of TRL's `examples/scripts/openreward/seta.py`: the tool surface,
the dataset and the reward come from a checked-in module (`generated/<env>.py`, made by
`orlgen snapshot`), not from schemas fetched when the trainer starts. A mixture module
(`generated/support_mix.py`) trains on several environments at once.

Usage (run from the project root, which holds `generated/`):

```sh
# A small model, one GPU; the module:Class env is served by the adapters themselves.
python examples/train_grpo.py --module generated.helpdesk

# Colocated vLLM, several GPUs.
accelerate launch --num_processes 4 examples/train_grpo.py --model Qwen/Qwen3-4B --use-vllm --vllm-mode colocate

# A separate vLLM server.
CUDA_VISIBLE_DEVICES=2,3 trl vllm-serve --model Qwen/Qwen3-4B --tensor-parallel-size 2 --port 8000
CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 examples/train_grpo.py --model Qwen/Qwen3-4B \
    --use-vllm --vllm-mode server --vllm-server-base-url http://localhost:8000

# A mixture: one URL per environment (or ORLGEN_<NAME>_URL), tasks per environment.
python examples/train_grpo.py --module generated.support_mix --counts echo=8,helpdesk=56 \
    --base-url echo=http://127.0.0.1:8765 --base-url helpdesk=http://127.0.0.1:8080

# Smoke run, offline, on CPU: a tiny random Qwen3 built in-process (tests/support/models/tiny_qwen3.py, in a
# source checkout of orlgen: run from its root).
python examples/train_grpo.py --module generated.echo --base-url http://127.0.0.1:8765 --tiny --max-steps 1
```

Without `--base-url`, an adapter reaches `ORLGEN_<NAME>_URL`, else the target in its snapshot
(a `module:Class` target: served by the process itself).
Besides TRL's metrics, every step logs orlgen's scoring coverage (`orlgen/scored_fraction`,
`orlgen/env_errors`, `orlgen/unfinished`, ...); rollouts the environment failed are unscored unless
`--env-error-reward` is given. At the end the model is saved to `--output-dir` (not with `--tiny`) and
the last batch's rollouts are summarized.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")  # before anything imports openreward

REPO = Path(__file__).resolve().parent.parent


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="GRPO training on an ORS environment through its generated module.")
    parser.add_argument(
        "--module",
        default="generated.helpdesk",
        help="dotted path of a generated module, or of a generated mixture module (default: generated.helpdesk)",
    )
    parser.add_argument(
        "--base-url",
        action="append",
        default=[],
        metavar="[NAME=]URL",
        help="the environment's server; for a mixture, NAME=URL once per environment",
    )
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B")
    parser.add_argument("--tiny", action="store_true", help="a tiny random Qwen3 built offline (smoke runs)")
    parser.add_argument("--split", default="train")
    parser.add_argument("--num-tasks", type=int, default=None, help="tasks in the dataset (default: all)")
    parser.add_argument(
        "--counts", type=_mapping(int), default=None, help="mixtures: tasks per environment, e.g. echo=8,helpdesk=56"
    )
    parser.add_argument(
        "--weights", type=_mapping(float), default=None, help="mixtures: shares of --num-tasks, e.g. echo=1,helpdesk=3"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-timeout", type=float, default=None, help="seconds per environment request (default 600)")
    parser.add_argument(
        "--on-drift", choices=("warn", "raise", "ignore"), default=None, help="live tools differ from the snapshot"
    )
    parser.add_argument(
        "--env-error-reward",
        type=float,
        default=None,
        help="reward for rollouts the environment failed (default: unscored)",
    )
    parser.add_argument(
        "--unfinished-reward",
        type=float,
        default=None,
        help="reward for rollouts that never finished (default: unscored)",
    )

    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--per-device-train-batch-size", type=int, default=4)
    parser.add_argument("--gradient-accumulation-steps", type=int, default=1)
    parser.add_argument("--num-generations", type=int, default=4)
    parser.add_argument("--max-completion-length", type=int, default=None, help="default: 2048; 128 with --tiny")
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--max-tool-calling-iterations", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--logging-steps", type=int, default=1)
    parser.add_argument("--no-gradient-checkpointing", action="store_true")
    parser.add_argument("--enable-thinking", action="store_true", help="keep Qwen3's thinking turns (off by default)")
    parser.add_argument("--log-completions", action="store_true")
    parser.add_argument("--output-dir", default="outputs/train_grpo")
    parser.add_argument("--report-to", default="none", help="comma-separated: wandb, trackio, tensorboard, ... or none")

    parser.add_argument("--use-vllm", action="store_true")
    parser.add_argument("--vllm-mode", choices=("colocate", "server"), default="colocate")
    parser.add_argument("--vllm-server-base-url", default=None)
    parser.add_argument("--vllm-gpu-memory-utilization", type=float, default=None)
    parser.add_argument("--vllm-tensor-parallel-size", type=int, default=None)
    parser.add_argument("--vllm-max-model-length", type=int, default=None)
    args = parser.parse_args(argv)
    if args.max_completion_length is None:
        args.max_completion_length = 128 if args.tiny else 2048
    return args


def _mapping(value_type):
    def parse(text: str) -> dict:
        try:
            pairs = (item.split("=", 1) for item in text.split(",") if item)
            return {name.strip(): value_type(value) for name, value in pairs}
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE[,NAME=VALUE...], got {text!r}") from None

    return parse


def load_module(dotted: str):
    """Import the generated module, from the current directory or the project root."""
    for path in (os.getcwd(), str(REPO)):
        if path not in sys.path:
            sys.path.insert(0, path)
    return importlib.import_module(dotted)


def base_urls(values: list[str], names: list[str] | None) -> dict[str | None, str]:
    """`--base-url` values by environment name (None for a single-environment module)."""
    urls: dict[str | None, str] = {}
    for value in values:
        named = re.match(r"([A-Za-z_]\w*)=(.+)", value)
        if names is None:
            if named:
                raise SystemExit(f"--base-url {value!r}: this module has one environment; pass the URL alone")
            urls[None] = value
        elif not named:
            raise SystemExit(f"--base-url {value!r}: a mixture needs NAME=URL, NAME one of {names}")
        elif named.group(1) not in names:
            raise SystemExit(f"--base-url {value!r}: unknown environment; the mixture has {names}")
        else:
            urls[named.group(1)] = named.group(2)
    return urls


def factory_for(env_class, url: str | None, args: argparse.Namespace):
    """A zero-argument factory: the generated class itself, or the class bound to the options given."""
    options = {"base_url": url, "timeout": args.env_timeout, "on_drift": args.on_drift}
    options = {name: value for name, value in options.items() if value is not None}
    return functools.partial(env_class, **options) if options else env_class


def build(args: argparse.Namespace, module):
    """(train_dataset, environment_factory) from a generated module or a generated mixture."""
    factory = module.environment_factory
    if isinstance(factory, dict):  # a mixture: {name: adapter class}
        urls = base_urls(args.base_url, sorted(factory))
        weights = args.weights
        if weights is None and args.counts is None and args.num_tasks is not None:
            weights = {name: 1.0 for name in factory}  # --num-tasks alone: equal shares
        dataset = module.build_dataset(
            args.split, counts=args.counts, weights=weights, num_tasks=args.num_tasks, seed=args.seed
        )
        return dataset, {name: factory_for(env_class, urls.get(name), args) for name, env_class in factory.items()}
    if args.counts is not None or args.weights is not None:
        raise SystemExit(f"--counts and --weights are for mixture modules; {args.module} has one environment")
    url = base_urls(args.base_url, None).get(None)
    dataset = module.build_dataset(args.split, num_tasks=args.num_tasks, base_url=url)
    return dataset, factory_for(factory, url, args)


def grpo_config(args: argparse.Namespace):
    from trl import GRPOConfig

    config = dict(
        output_dir=args.output_dir,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=args.per_device_train_batch_size,
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_steps=args.max_steps,
        max_tool_calling_iterations=args.max_tool_calling_iterations,
        temperature=args.temperature,
        logging_steps=args.logging_steps,
        chat_template_kwargs={"enable_thinking": args.enable_thinking},
        log_completions=args.log_completions,
        report_to=[name for name in args.report_to.split(",") if name.strip() not in ("", "none")] or "none",
        seed=args.seed,
        use_vllm=args.use_vllm,
        vllm_mode=args.vllm_mode,
    )
    for option in (
        "vllm_server_base_url",
        "vllm_gpu_memory_utilization",
        "vllm_tensor_parallel_size",
        "vllm_max_model_length",
    ):
        if getattr(args, option) is not None:
            config[option] = getattr(args, option)
    checkpointing = not (args.no_gradient_checkpointing or args.tiny)
    fields = {field.name for field in dataclasses.fields(GRPOConfig)}
    config["activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"] = (
        checkpointing
    )
    if args.tiny:
        config.update(bf16=False, disable_tqdm=True, save_strategy="no")
    return GRPOConfig(**config)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    module = load_module(args.module)
    from orlgen.runtime import ConfigError, DatasetError

    try:
        train(args, module)
    except (ConfigError, DatasetError) as exc:  # no address for the environment, a bad task request
        raise SystemExit(f"train_grpo: error: {exc}") from None


def train(args: argparse.Namespace, module) -> None:
    train_dataset, environment_factory = build(args, module)

    model = args.model
    if args.tiny:
        import torch

        try:
            from tests.support.models.tiny_qwen3 import tiny_qwen3_dir
        except ImportError:  # the tiny model is a test helper of the source checkout, not packaged
            raise SystemExit(
                "train_grpo: error: --tiny needs orlgen's source checkout (tests/support/models/tiny_qwen3.py): run from its root"
            ) from None

        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
        torch.set_num_threads(1)  # a model this small runs faster on one thread
        model = str(tiny_qwen3_dir())

    from orlgen.runtime import outcome_reward_with, scoring_metrics
    from trl import GRPOTrainer

    # The adapters score their rollouts (get_reward); scoring_metrics logs orlgen/scored_fraction, env_errors, ...
    reward_funcs = [*module.reward_funcs, scoring_metrics]
    if args.env_error_reward is not None or args.unfinished_reward is not None:
        reward_funcs = [outcome_reward_with(env_error=args.env_error_reward, unfinished=args.unfinished_reward)]
    trainer = GRPOTrainer(
        model=model,
        args=grpo_config(args),
        train_dataset=train_dataset,
        environment_factory=environment_factory,
        reward_funcs=reward_funcs,
    )
    trainer.train()
    if not args.tiny:
        trainer.save_model(args.output_dir)
    if trainer.accelerator.is_main_process:
        print(summary(trainer.environments))


def summary(environments) -> str:
    """The last batch's rollouts as the adapters saw them: outcomes, rewards, environment errors."""
    from collections import Counter

    outcomes = Counter(env.outcome for env in environments)
    rewards = [env.reward for env in environments]
    lines = [f"last batch: {len(environments)} rollouts, outcomes {dict(sorted(outcomes.items()))}, rewards {rewards}"]
    lines += [f"  environment error: {env.error}" for env in environments if env.outcome == "env_error"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
