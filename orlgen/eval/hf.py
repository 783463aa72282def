"""A local transformers checkpoint as the policy, seen through TRL's own chat-template handling
and tool-call parsing, so eval reads the model's output exactly as `GRPOTrainer` does.

What is TRL's here (trl 1.16, `GRPOTrainer.__init__`, `_tokenize_prompts`, `_tool_call_loop`):
`add_response_schema` gives the tokenizer the response parser of its known template; a template
that is not prefix-preserving (Qwen3's drops past thinking) is replaced by
`get_training_chat_template`; the first turn renders the conversation with the tool methods
(`apply_chat_template(..., tools=methods or None, add_generation_prompt=True)`); every later
turn is the previous ids, the model's own completion ids, and the tool results' tokens from
GRPOTrainer's `_get_tool_suffix_ids` (called on a stand-in for the trainer's attributes it
reads); each completion is parsed by `parse_response(tokenizer, ids, prefix=prompt_ids,
tools=methods)`. Re-rendering the history instead would show the model tokens it never wrote.

Generation runs one request at a time (a model is not thread-safe, and a CPU gains nothing from
more), seeded per turn. On Ctrl-C the run halts the model (`halt`) before the interpreter exits,
and the model's tensors are freed there, in the thread that halts it: a daemon worker still
generating, or dropping the last reference to the model, while the interpreter finalizes is ended
inside torch's C++ frames, and the process aborts (SIGABRT, `terminate called without an active
exception`) instead of exiting 130. So every tensor a turn makes lives and dies under the lock.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..runtime.errors import described
from .errors import Unreachable
from .policy import PolicyError


class LocalModel:
    def __init__(self, path: str, *, max_tokens: int = 512) -> None:
        self.path = path
        self.max_tokens = max_tokens
        self._lock = threading.Lock()  # held by the one turn generating
        self._halted = threading.Event()
        self._chat: tuple[Any, Any] | None = None  # the tokenizer, and the template TRL renders with
        self._model: Any = None  # held by this object alone; loaded and used under the lock

    def check(self) -> None:
        """Load the checkpoint now, so a wrong path fails the run before any rollout."""
        if not Path(self.path).is_dir():
            raise Unreachable(f"--hf-model {self.path}: no such checkpoint directory")
        try:
            self._tokenizer()
            with self._lock:
                self._weights()
        except Exception as exc:
            raise Unreachable(f"--hf-model {self.path}: cannot load: {described(exc)}") from exc

    def start(self) -> Conversation:
        return Conversation(self)

    def halt(self) -> None:
        """Stop generating, and return once nothing generates: the turn in progress stops at its
        next token (its rollout then ends as a `policy_error`, never written: the run was
        interrupted), and any later turn fails at once. The model is freed here, in the caller."""
        self._halted.set()
        with self._lock:  # the turn generating holds it until its `generate` has returned
            self._model = None
        gc.collect()  # and any cycle among the model's objects: no worker's collection may free them

    def _tokenizer(self) -> tuple[Any, Any]:
        if self._chat is None:
            from transformers import AutoTokenizer
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
            self._chat = (tokenizer, template)
        return self._chat

    def _weights(self) -> Any:
        """The model, loaded on first use; called under the lock and never once halted."""
        if self._model is None:
            from transformers import AutoModelForCausalLM

            self._model = AutoModelForCausalLM.from_pretrained(self.path).eval()
        return self._model

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[Callable[..., Any]]) -> list[int]:
        """A conversation rendered for its first model turn, as GRPOTrainer renders a prompt."""
        tokenizer, template = self._tokenizer()
        try:
            rendered = tokenizer.apply_chat_template(
                messages,
                tools=tools or None,  # as TRL: some templates print tool boilerplate for an empty list
                chat_template=template,
                add_generation_prompt=True,
                tokenize=True,
                return_dict=True,
            )
        except Exception as exc:  # a conversation the template cannot render
            raise PolicyError(f"the chat template failed: {described(exc)}") from exc
        return list(rendered["input_ids"])

    def tool_suffix_ids(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        """The tokens GRPOTrainer appends for tool results: its own `_get_tool_suffix_ids`."""
        from trl import GRPOTrainer

        tokenizer, template = self._tokenizer()
        trainer = SimpleNamespace(
            processing_class=tokenizer,
            _tokenizer=tokenizer,
            chat_template=template,
            chat_template_kwargs={},
            _is_vlm=False,
        )
        return list(GRPOTrainer._get_tool_suffix_ids(trainer, tool_messages))  # type: ignore[arg-type]

    def complete(self, prompt_ids: list[int], *, seed: int, temperature: float) -> list[int]:
        tokenizer, _ = self._tokenizer()
        with self._lock:
            if self._halted.is_set():
                raise PolicyError("the run was interrupted: the local model generates no more")
            return _generate(
                self._weights(), prompt_ids, seed=seed, temperature=temperature, max_tokens=self.max_tokens,
                pad_token_id=tokenizer.pad_token_id, halted=self._halted,
            )  # fmt: skip

    def parse(self, completion: list[int], prompt_ids: list[int], tools: list[Callable[..., Any]]) -> dict[str, Any]:
        from trl.chat_template_utils import parse_response

        tokenizer, _ = self._tokenizer()
        parsed = parse_response(tokenizer, completion, prefix=prompt_ids, tools=list[Any](tools))
        message: dict[str, Any] = {"role": "assistant", "content": parsed.get("content") or ""}
        if parsed.get("tool_calls"):
            message["tool_calls"] = parsed["tool_calls"]
        return message


def _generate(
    model: Any, prompt_ids: list[int], *, seed: int, temperature: float, max_tokens: int, pad_token_id: Any,
    halted: threading.Event,
) -> list[int]:  # fmt: skip
    """One seeded `generate`: its tensors are freed when this returns, in the caller's lock."""
    import torch

    with torch.no_grad():
        torch.manual_seed(seed % 2**63)
        prompt = torch.tensor([prompt_ids])
        out = model.generate(
            prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=max_tokens,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=None,
            top_k=None,
            pad_token_id=pad_token_id,
            stopping_criteria=_until(halted),
        )
        return list(out[0, prompt.shape[1] :].tolist())


def _until(halted: threading.Event) -> Any:
    """transformers' stopping criteria that end a `generate` at the next token once `halted` is set."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class Halted(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), halted.is_set(), dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([Halted()])


class Conversation:
    """One rollout's token ids, grown turn by turn as GRPOTrainer grows them."""

    def __init__(self, model: LocalModel) -> None:
        self.model = model
        self.ids: list[int] | None = None
        self.seen = 0  # messages already in `ids`

    def turn(
        self, messages: list[dict[str, Any]], tools: list[Callable[..., Any]], *, seed: int, temperature: float
    ) -> dict[str, Any]:
        new = messages[self.seen :]
        if self.ids is None or not new or any(message["role"] != "tool" for message in new):
            prompt_ids = self.model.prompt_ids(messages, tools)  # the first turn (or a history we did not grow)
        else:
            prompt_ids = self.ids + self.model.tool_suffix_ids(new)
        completion = self.model.complete(prompt_ids, seed=seed, temperature=temperature)
        self.ids, self.seen = prompt_ids + completion, len(messages) + 1  # the reply is appended next
        return self.model.parse(completion, prompt_ids, tools)
