"""A loopback OpenAI-compatible chat-completions stub that plays a script for the both-env
(`tests/support/envs/both.py`): adapted from TRAINERS.md's recipe (`trainer-recipes/stub_openai.py`).

A scripted endpoint, not a model: it stands in for the model so `vf-eval` runs offline. Serves POST /v1/chat/completions (JSON or SSE when the
request says "stream": true) and GET /v1/models on 127.0.0.1.

The script: the n-th assistant turn (n = number of assistant messages already in
the request) answers with script(task)[n], where `task` is the id the prompt names
("Task 3: ..."), so the script wins only when the session's prompt reached the model:
`look` (an image comes back), then `submit` of that task's target, then a text answer.
With STUB_SCRIPT=plain: a text answer at once (any env); idle: `look`, then a text answer (the episode is never finished); with
STUB_SCRIPT=calls:N, N calls of `count` before the submit (bench/trainers.py times them).
Each logged request carries `_received`, the stub's clock when it arrived.
A step ("look", {}) is a tool call; a plain string is a final text answer.
  * With "tools" in the request (verifiers): native `tool_calls`, the tool name
    resolved against the advertised names by suffix (so `counter_increment`
    matches "increment").
  * Without "tools" (skyrl-gym: tools live in the prompt): the call is written in
    the text as <tool_call>{"name": ..., "arguments": ...}</tool_call>.
Every request body is appended to --log as one JSON line.

  python tests/support/stub_openai.py --port-file $TMPDIR/stub.port --log $TMPDIR/stub.jsonl
"""

import argparse
import json
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support.envs.both import TASKS
from tests.support.graded_policy import Plans

SCRIPT = os.environ.get("STUB_SCRIPT", "win")  # "win", or "idle"
TARGETS = {task["id"]: task["target"] for tasks in TASKS.values() for task in tasks}
# STUB_SCRIPT=graded:TASK:CALLS,...: the graded env's rollouts (tests/support/graded_policy.py)
GRADED = Plans.parse(SCRIPT.removeprefix("graded:")) if SCRIPT.startswith("graded:") else None


def script(body: dict) -> list:
    """The both-env's winning script for the task the first user message names (-1 when none)."""
    if GRADED is not None:
        return GRADED.steps(body)
    first = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "user"), "")
    found = re.match(r"Task (\d+):", first if isinstance(first, str) else "")
    answer = TARGETS.get(int(found.group(1)), -1) if found else -1
    if SCRIPT == "plain":  # a text answer at once: any env
        return ["Nothing to do."]
    if SCRIPT == "idle":  # never submits: the rollout ends unfinished, when the model stops
        return [("look", {}), "I give up."]
    if SCRIPT.startswith("calls:"):  # N cheap calls, then the win: for timing a tool call
        return [("count", {})] * int(SCRIPT.removeprefix("calls:")) + [("submit", {"answer": answer}), "Done."]
    return [("look", {}), ("submit", {"answer": answer}), f"I submitted {answer}."]


def resolve(name: str, tools: list[dict]) -> str:
    names = [t["function"]["name"] for t in tools if t.get("type") == "function"]
    hits = [n for n in names if n == name or n.endswith("_" + name)]
    return hits[0] if hits else name


def reply(body: dict) -> tuple[dict, str]:
    """The assistant message for this request and its finish_reason."""
    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    steps = script(body)
    step = steps[min(turn, len(steps) - 1)]
    if isinstance(step, str):
        return {"role": "assistant", "content": step}, "stop"
    name, args = step
    tools = body.get("tools") or []
    if not tools:
        text = f'<tool_call>{json.dumps({"name": name, "arguments": args})}</tool_call>'
        return {"role": "assistant", "content": text}, "stop"
    call = {
        "id": f"call_{turn}",
        "type": "function",
        "function": {"name": resolve(name, tools), "arguments": json.dumps(args)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"


class Handler(BaseHTTPRequestHandler):
    log_path: Path | None = None

    def log_message(self, *args):  # quiet
        pass

    def _send(self, code: int, payload: bytes, ctype: str = "application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            data = {"object": "list", "data": [{"id": "stub", "object": "model"}]}
            return self._send(200, json.dumps(data).encode())
        self._send(404, b'{"error": "not found"}')

    def do_POST(self):
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, b'{"error": "not found"}')
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.log_path:
            with self.log_path.open("a") as f:
                f.write(json.dumps({"_received": time.time(), **body}) + "\n")
        message, finish = reply(body)
        base = {"id": "chatcmpl-stub", "created": int(time.time()), "model": body.get("model", "stub")}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            data = base | {
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
            return self._send(200, json.dumps(data).encode())
        delta = dict(message)
        if "tool_calls" in delta:
            delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(delta["tool_calls"])]
        chunks = [
            {"index": 0, "delta": delta, "finish_reason": None},
            {"index": 0, "delta": {}, "finish_reason": finish},
        ]
        events = [base | {"object": "chat.completion.chunk", "choices": [c]} for c in chunks]
        events.append(base | {"object": "chat.completion.chunk", "choices": [], "usage": usage})
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self._send(200, payload.encode(), "text/event-stream")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", default="")
    parser.add_argument("--log", default="")
    args = parser.parse_args()
    Handler.log_path = Path(args.log) if args.log else None
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    port = server.server_address[1]
    if args.port_file:
        Path(args.port_file).write_text(str(port))
    print(f"stub listening on http://127.0.0.1:{port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
