"""A tiny, random Qwen3 chat model built fully offline, for end-to-end TRL tests.

Nothing here downloads anything: the tokenizer is a byte-level BPE trained in-process on a small
corpus, with Qwen3's added tokens, wrapped in a transformers fast tokenizer whose `chat_template` is
the exact text of TRL's shipped Qwen3 template (TRL only sets up tool-call parsing for templates it
recognises byte for byte). The model is a random `Qwen3ForCausalLM` (hidden size 64, 2 layers).
`tiny_qwen3_dir()` saves both to a temp directory, once per process, so `GRPOTrainer(model=path)`
loads them like any Hub checkpoint.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

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

_CORPUS = [
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
]


def qwen3_chat_template() -> str:
    """TRL's shipped Qwen3 chat template, byte for byte."""
    from trl.chat_template_utils import qwen3_chat_template as template

    return template


def build_tokenizer(vocab_size: int = 1024):
    """A byte-level BPE tokenizer trained in-process, with Qwen3's added tokens and chat template."""
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
    tokenizer.train_from_iterator([*_CORPUS, template], trainer=trainer)
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
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    wrapped.chat_template = template
    return wrapped


def build_model(tokenizer, *, seed: int = 0):
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
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id)
    return model


def build_tiny_qwen3(path: str | Path) -> Path:
    """Build the tokenizer and the random model and save both to `path` (a Hub-like checkpoint dir)."""
    path = Path(path)
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


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
