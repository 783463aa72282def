"""A tiny real model behind the one vLLM route TRL's async rollout worker calls.

`AsyncGRPOTrainer`'s rollout worker generates through a vLLM server's OpenAI-style
`POST /v1/completions` (token ids in, `choices[0].token_ids` and `choices[0].logprobs.token_logprobs`
out; `trl/experimental/async_grpo/async_rollout_worker.py`, `_generate_one_turn`). vLLM cannot run
on this CPU-only machine, so this serves `tests/support/models/tiny_qwen3.py`'s model with transformers'
`generate` on a loopback port: sampling with the request's temperature and seed, stopping at EOS
or `max_tokens`. Weight sync and the other vLLM routes are the trainer's, not the worker's, and
are not served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class CompletionModel:
    """Generation for `/v1/completions` requests, one at a time (the model is not thread-safe)."""

    def __init__(self, model: Any, eos_token_id: int) -> None:
        self.model = model.eval()
        self.eos_token_id = eos_token_id
        self.lock = threading.Lock()
        self.requests = 0

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        import torch

        prompt = torch.tensor([request["prompt"]])
        temperature = float(request.get("temperature", 1.0))
        with self.lock, torch.no_grad():
            self.requests += 1
            torch.manual_seed(int(request.get("seed", 0)) % 2**63)
            out = self.model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=int(request["max_tokens"]),
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=None,
                top_k=None,
                eos_token_id=self.eos_token_id,
                pad_token_id=self.eos_token_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
            token_ids = out.sequences[0, prompt.shape[1] :].tolist()
            logprobs = [
                float(torch.log_softmax(score[0].float(), dim=-1)[token])
                for score, token in zip(out.scores, token_ids, strict=False)
            ]
        return {"choices": [{"token_ids": token_ids, "logprobs": {"token_logprobs": logprobs}}]}


@contextmanager
def serving_completions(model: CompletionModel) -> Iterator[str]:
    """Serve `model` on a free loopback port; yield its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/v1/completions":
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            payload = json.dumps(model.complete(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
