"""A local transformers checkpoint as the policy, seen through TRL's own chat-template handling
and tool-call parsing, so eval reads the model's output exactly as `GRPOTrainer` does.

What is TRL's here (trl 1.16, `GRPOTrainer.__init__` and `_generate_and_score_completions`):
`add_response_schema` gives the tokenizer the response parser of its known template; a template
that is not prefix-preserving is swapped for `get_training_chat_template`; each turn renders the
conversation with the tool methods (`apply_chat_template(..., tools=methods or None,
add_generation_prompt=True)`) and parses the generated ids with `parse_response(tokenizer, ids,
prefix=prompt_ids, tools=methods)`. One difference: the trainer extends the token sequence with
the tool results' suffix instead of re-rendering; for a prefix-preserving template both give the
same tokens.

Generation runs one request at a time (a model is not thread-safe, and a CPU gains nothing from
more), seeded per turn.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import Unreachable
from .policy import PolicyError


class LocalModel:
    def __init__(self, path: str, *, max_tokens: int = 512) -> None:
        self.path = path
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, Any] | None = None

    def check(self) -> None:
        """Load the checkpoint now, so a wrong path fails the run before any rollout."""
        if not Path(self.path).is_dir():
            raise Unreachable(f"--hf-model {self.path}: no such checkpoint directory")
        try:
            self._load()
        except Exception as exc:
            raise Unreachable(
                f"--hf-model {self.path}: cannot load: {type(exc).__name__}: {exc}".splitlines()[0]
            ) from exc

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer
            from trl.chat_template_utils import (
                add_response_schema,
                get_training_chat_template,
                is_chat_template_prefix_preserving,
            )

            tokenizer: Any = AutoTokenizer.from_pretrained(self.path)
            if (
                getattr(tokenizer, "response_template", None) is None
                and getattr(tokenizer, "response_schema", None) is None
            ):
                tokenizer = add_response_schema(tokenizer)
            template = None if is_chat_template_prefix_preserving(tokenizer) else get_training_chat_template(tokenizer)
            model = AutoModelForCausalLM.from_pretrained(self.path).eval()
            self._loaded = (tokenizer, model, template)
        return self._loaded

    def turn(
        self, messages: list[dict[str, Any]], tools: list[Callable[..., Any]], *, seed: int, temperature: float
    ) -> dict[str, Any]:
        import torch
        from trl.chat_template_utils import parse_response

        tokenizer, model, template = self._load()
        try:
            prompt_ids = tokenizer.apply_chat_template(
                messages,
                tools=tools or None,  # as TRL: some templates print tool boilerplate for an empty list
                chat_template=template,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )["input_ids"]
        except Exception as exc:  # a conversation the template cannot render
            raise PolicyError(f"the chat template failed: {type(exc).__name__}: {exc}".splitlines()[0]) from exc
        prompt = torch.tensor([list(prompt_ids)])
        with self._lock, torch.no_grad():
            torch.manual_seed(seed % 2**63)
            out = model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=self.max_tokens,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=None,
                top_k=None,
                pad_token_id=tokenizer.pad_token_id,
            )
        completion = out[0, prompt.shape[1] :].tolist()
        parsed = parse_response(tokenizer, completion, prefix=list(prompt_ids), tools=list[Any](tools))
        message: dict[str, Any] = {"role": "assistant", "content": parsed.get("content") or ""}
        if parsed.get("tool_calls"):
            message["tool_calls"] = parsed["tool_calls"]
        return message
