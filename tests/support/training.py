"""The one GRPOTrainer set-up of the TRL tests: a real trainer, one step, on CPU.

What is shared: the config of a one-step run (`grpo_config`: CPU, float32, no activation
checkpointing, 4 rows of 2 generations, 64 completion tokens, 3 tool rounds, seeded, no
reporting, no saving), the trainer built from it with the tiny Qwen3 of `models/tiny_qwen3.py`
unless a test brings its own model (`grpo_trainer`; `make_trainer` for one generated module
against one server), an `environment_factory` that keeps every adapter TRL makes (`Recorder`),
and the token ids of a row's first turn exactly as TRL renders them (`first_turn_ids`), which is
what a test teaches the model to answer (`models/tiny_qwen3.teach`); conftest's
`quiet_and_single_threaded` fixture quiets TRL and runs torch on one thread. A test passes as overrides
only what its case needs, so what differs from the next test is what it is about.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from orlgen.runtime.trl.rollout import trl_prompt

from tests.support.models.tiny_qwen3 import EOS_TOKEN, tiny_qwen3_dir

ONE_STEP: Mapping[str, Any] = {
    "use_cpu": True,
    "bf16": False,
    "activation_checkpointing": False,
    "max_steps": 1,
    "per_device_train_batch_size": 4,
    "num_generations": 2,
    "max_completion_length": 64,
    "max_tool_calling_iterations": 3,
    "learning_rate": 1e-5,
    "logging_steps": 1,
    "report_to": [],
    "save_strategy": "no",
    "disable_tqdm": True,
    "seed": 0,
}


class Recorder:
    """A zero-argument `environment_factory` that keeps every adapter TRL makes from it."""

    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory
        self.created: list[Any] = []

    def __call__(self) -> Any:
        env = self.factory()
        self.created.append(env)
        return env


def grpo_config(output_dir: str | Path, **overrides: Any):
    """The one-step `GRPOConfig`, with a test's `overrides` on top."""
    from trl import GRPOConfig

    return GRPOConfig(output_dir=str(output_dir), **{**ONE_STEP, **overrides})


def grpo_trainer(
    output_dir: str | Path,
    *,
    environment_factory: Any,
    train_dataset: Any,
    reward_funcs: Sequence[Any] = (),
    model: Any = None,
    processing_class: Any = None,
    eval_dataset: Any = None,
    **overrides: Any,
):
    """A real `GRPOTrainer` of the one-step config; the tiny Qwen3 unless `model` is given."""
    from trl import GRPOTrainer

    return GRPOTrainer(
        model=str(tiny_qwen3_dir()) if model is None else model,
        processing_class=processing_class,
        args=grpo_config(output_dir, **overrides),
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        environment_factory=environment_factory,
        reward_funcs=list(reward_funcs),
    )


def make_trainer(model_path, module, base_url, dataset, output_dir, reward_funcs=None, **overrides):
    """A trainer on one generated module's environment served at `base_url`, scored by the
    module's `reward_funcs` unless others are given; returns it and its `Recorder`."""
    factory = Recorder(functools.partial(module.environment_factory, base_url=base_url))
    trainer = grpo_trainer(
        output_dir,
        model=model_path,
        environment_factory=factory,
        train_dataset=dataset,
        reward_funcs=module.reward_funcs if reward_funcs is None else reward_funcs,
        **overrides,
    )
    return trainer, factory


def first_turn_ids(trainer, row: Mapping[str, Any], prompt: str, tools: Sequence[Any] | None = None) -> list[int]:
    """The token ids TRL renders for `row`'s first turn: the row's messages with the env's
    `prompt` (what `reset` returned) appended to the last as TRL's loop appends it (the shared
    `trl_prompt`), with the trainer's tools (or `tools`, an environment's own in a mixture)
    through the trainer's chat template."""
    return trainer.processing_class.apply_chat_template(
        trl_prompt(row, prompt),
        tools=trainer.tools if tools is None else tools,
        chat_template=trainer.chat_template,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
    )["input_ids"]


def answer_ids(tokenizer, text: str) -> list[int]:
    """The ids of `text` as the model's whole answer: its tokens, then the end of the turn."""
    return [*tokenizer(text, add_special_tokens=False)["input_ids"], tokenizer.convert_tokens_to_ids(EOS_TOKEN)]
