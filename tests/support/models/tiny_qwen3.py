"""The tiny, random Qwen3 chat model of `orlgen.tiny_model`, as the end-to-end TRL tests take it.

The model is the package's (`save_tiny_model`, built fully offline; see that module): what a user
builds for a first run is what the suite trains. Here: `tiny_qwen3_dir()`, one checkpoint per
process in a temp directory, so `GRPOTrainer(model=path)` loads it like any Hub checkpoint;
`build_tokenizer`, whose corpus a test may extend through `_CORPUS` (tests/test_mixture.py does, for
helpdesk's prompts); and `teach`, supervised steps that make the random model answer as a test needs.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from orlgen import tiny_model
from orlgen.tiny_model import EOS_TOKEN, PAD_TOKEN, build_model, qwen3_chat_template, save_tiny_model

__all__ = [
    "EOS_TOKEN",
    "PAD_TOKEN",
    "build_model",
    "build_tiny_qwen3",
    "build_tokenizer",
    "qwen3_chat_template",
    "teach",
    "tiny_qwen3_dir",
]

_CORPUS: tuple[str, ...] | list[str] = tiny_model.CORPUS


def build_tokenizer(vocab_size: int = 1024):
    """The package's tokenizer, its merges learnt from this module's `_CORPUS` (read at each call)."""
    return tiny_model.build_tokenizer(vocab_size, corpus=_CORPUS)


def build_tiny_qwen3(path: str | Path) -> Path:
    """Build the tokenizer and the random model and save both to `path` (a Hub-like checkpoint dir)."""
    return Path(save_tiny_model(path))


@functools.cache
def tiny_qwen3_dir() -> Path:
    """The checkpoint dir of the tiny model, built on first use and reused for the rest of the process."""
    path = Path(tempfile.mkdtemp(prefix="orlgen-tiny-qwen3-"))
    atexit.register(shutil.rmtree, path, True)
    return build_tiny_qwen3(path)


def teach(model, examples, *, steps: int = 80, lr: float = 5e-3, seed: int = 0) -> float:
    """Supervised steps (a plain torch loop) that teach `model` to continue each prompt with its completion.

    `examples` is a list of `(prompt_ids, completion_ids)`; the loss covers completion tokens only.
    Returns the final loss. Training mode and torch's thread count are restored afterwards; it runs
    on one thread, which on a small shared CPU is several times faster than two for a model this size.
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _teach(model, examples, steps, lr, seed)
    finally:
        torch.set_num_threads(threads)


def _teach(model, examples, steps: int, lr: float, seed: int) -> float:
    import torch

    torch.manual_seed(seed)
    pad_id = model.config.pad_token_id
    width = max(len(p) + len(c) for p, c in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    attention_mask = torch.zeros((len(examples), width), dtype=torch.long)
    for row, (prompt, completion) in enumerate(examples):
        ids = list(prompt) + list(completion)
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, len(prompt) : len(ids)] = torch.tensor(list(completion))
        attention_mask[row, : len(ids)] = 1
    was_training = model.training
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
        loss.backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    model.train(was_training)
    return float(loss.detach())
