"""A tiny, random Qwen3-shaped chat model, built offline: for a first training run on a CPU.

A quickstart that names `Qwen/Qwen3-0.6B` needs the Hub and, in practice, a GPU. This builds a
checkpoint that `GRPOTrainer(model=path)` loads like any Hub checkpoint, in seconds and with no
download: a byte-level BPE tokenizer trained in-process on a small corpus, carrying Qwen3's added
tokens and TRL's shipped Qwen3 chat template byte for byte (TRL sets up hermes-style
`<tool_call>` parsing only for templates it recognises exactly), and a random `Qwen3ForCausalLM`
(hidden size 64, 2 layers). Its outputs are noise: it proves the wiring, not the learning.

Needs `orlgen[train]` (trl, transformers, torch), imported only when a model is built: orlgen's
runtime imports nothing from here. The suite's tests train this same model
(`tests/support/models/tiny_qwen3.py`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from orlgen import __version__

__all__ = ["save_tiny_model"]

# Qwen3's added vocabulary, in Qwen3's order. `special` as in Qwen3's tokenizer.json: the tool and
# think markers are *not* special, so `decode(skip_special_tokens=True)` keeps them, as with the real model.
QWEN3_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", True),
    ("<|fim_middle|>", True),
    ("<|fim_suffix|>", True),
    ("<|fim_pad|>", True),
    ("<|repo_name|>", True),
    ("<|file_sep|>", True),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
)

EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# What the tokenizer's merges are learnt from, with the chat template: the words of tool prompts,
# tool calls and the example envs, so that their text takes fewer tokens than bytes.
CORPUS: tuple[str, ...] = (
    "You may call one or more functions to assist with the user query.",
    "You are provided with function signatures within <tools></tools> XML tags:",
    "For each function call, return a json object with function name and arguments within XML tags:",
    '{"name": <function-name>, "arguments": <args-json-object>}',
    '{"type": "function", "function": {"name": "echo", "description": "Echo a text back.", '
    '"parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "The text argument."}}, '
    '"required": ["text"]}, "return": {"type": "string"}}}',
    '{"name": "echo", "arguments": {"text": "hello"}}',
    '{"name": "get_order", "arguments": {"order_id": "ORD-12345"}}',
    "Call the echo tool with the text 'hello'. Reveal the first letter of the target.",
    "Echo a text back to the environment. Wins when it equals the target string. The episode ends after the first echo.",
    "correct wrong done the a an and or of to in is it that this with for on as by be not",
    "system user assistant tool Tools nullable enum integer number boolean array object string",
    "Customer support: look up the order, refund, cancel, reply to the customer, submit the resolution.",
    "0 1 2 3 4 5 6 7 8 9 10 100 ( ) [ ] { } < > : ; , . ' \" ! ? - _ = + * / \\ | # @ $ % ^ & ~ `",
)

# The positions the checkpoint declares, Qwen3-0.6B's (RoPE learns none, so this costs nothing).
# With this small vocabulary an env's tool block alone can be thousands of tokens (helpdesk's
# prompt is ~3,100), and TRL drops every tool result that would take a rollout past the figure.
MAX_POSITIONS = 40_960

# Written beside the weights: a directory holding it is one this module made, and may be replaced.
MARKER = "ORLGEN_TINY_MODEL"
# Names the orlgen that built it: a model of this one is kept as it is (the same bytes), another's replaced.
_MARKER_TEXT = f"A tiny random model written by orlgen {__version__}'s save_tiny_model, for trying orlgen out.\n"


def qwen3_chat_template() -> str:
    """TRL's shipped Qwen3 chat template, byte for byte."""
    from trl.chat_template_utils import qwen3_chat_template as template

    return str(template)


def build_tokenizer(vocab_size: int = 1024, corpus: tuple[str, ...] | list[str] = CORPUS) -> Any:
    """A byte-level BPE tokenizer trained in-process on `corpus`, with Qwen3's added tokens and chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    template = qwen3_chat_template()
    tokenizer = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tokenizer.train_from_iterator([*corpus, template], trainer=trainer)
    tokenizer.add_tokens(
        [
            AddedToken(text, special=special, normalized=False, single_word=False, lstrip=False, rstrip=False)
            for text, special in QWEN3_ADDED_TOKENS
        ]
    )
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=MAX_POSITIONS,
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = template
    return wrapped


def build_model(tokenizer: Any, *, seed: int = 0) -> Any:
    """A random `Qwen3ForCausalLM`: hidden size 64, 2 layers, the tokenizer's vocabulary."""
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id)
    return model


def save_tiny_model(path: str | os.PathLike[str]) -> str:
    """Build the tiny model and its tokenizer and save both to the directory `path`; return it as a string.

    The same bytes on every call. `path` may be missing, empty, or a tiny model saved here before:
    this orlgen's is kept as it is, another's replaced whole; any other directory or file is
    refused with a `ValueError`, and nothing in it is touched. The checkpoint is written beside
    `path` and renamed into place, so `path` never holds half of one.
    """
    target = Path(path)
    if _current(target):
        return str(target)
    if (target.exists() or target.is_symlink()) and not _replaceable(target):
        raise ValueError(f"save_tiny_model: {target} exists and is not a tiny model saved before; give a new directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        tokenizer = build_tokenizer()
        build_model(tokenizer).save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
        _swap_in(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def _current(target: Path) -> bool:
    """A tiny model this orlgen saved: what a new save would write, byte for byte."""
    marker = target / MARKER
    return target.is_dir() and not target.is_symlink() and marker.is_file() and marker.read_text() == _MARKER_TEXT


def _replaceable(target: Path) -> bool:
    """An empty directory, or one this module wrote (its marker there)."""
    return target.is_dir() and not target.is_symlink() and (not any(target.iterdir()) or (target / MARKER).is_file())


def _swap_in(staging: Path, target: Path) -> None:
    """Put `staging` at `target`, the old directory (if any) moved aside first and removed after.

    Processes that run the same script at once (the ranks of a `torchrun`) may each save to one
    path: one that finds the path taken by another's model of this orlgen keeps that one (the same
    bytes), never moving it while another process may be loading it.
    """
    with contextlib.suppress(OSError):
        staging.rename(target)  # atomic where nothing, or an empty directory, is there
        return
    if _current(target):
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
    old = aside / target.name
    try:
        with contextlib.suppress(FileNotFoundError):  # absent, or another process moved it first
            target.rename(old)
        try:
            staging.rename(target)
        except OSError:
            if not (target / MARKER).is_file():
                if old.exists():
                    old.rename(target)  # put back what was there
                raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)
