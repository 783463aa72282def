"""`python -m tests.support.servers.wire tests.support.envs.wire:Wire PORT`: the wire env served by the real SDK
server, with FAULT INJECTION: an ASGI middleware rewrites answers into values the SDK's models
would never build. A tool answer (an SSE stream) whose metadata names a case in `CASES` has
those fields replaced (case `long-refusal`: the answer becomes a refusal whose
error text is `LONG_OUTPUT` characters long); a prompt holding `MALFORMED_PROMPT` becomes a text block with an int."""

from __future__ import annotations

import json
import sys

import openreward.environments

from tests.support.envs.wire import LONG_OUTPUT, MALFORMED_PROMPT

# case → the fields of the tool output replaced on the wire
CASES = {
    "reward-list": {"reward": [1.0]},
    "reward-dict": {"reward": {"score": 1.0}},
    "reward-string": {"reward": "abc"},
    "reward-inf-string": {"reward": "inf"},
    "reward-nan-string": {"reward": "nan"},
    "reward-inf": {"reward": float("inf")},  # JSON `Infinity`, which Python's json reads
    "reward-nan": {"reward": float("nan")},
    "reward-bool": {"reward": True},
    "finished-string": {"finished": "false"},
    "finished-int": {"finished": 1},
    "text-int": {"blocks": [{"type": "text", "text": 5}]},
    "image-data-int": {"blocks": [{"type": "image", "data": 7, "mimeType": "image/png"}]},
    "reasoning-block": {"blocks": [{"type": "reasoning", "text": "not a tool output block"}]},
    "metadata-list": {"metadata": [1, 2]},
}


def rewrite_call(body: bytes) -> bytes:
    """The SSE answer of `/call` with its tool output's fields replaced, as one end event."""
    events = [event for event in body.decode().replace("\r\n", "\n").split("\n\n") if event.strip()]
    task_id, data = None, []
    for event in events:
        fields = dict(line.split(": ", 1) if ": " in line else (line.rstrip(":"), "") for line in event.split("\n"))
        if fields.get("event") == "task_id":
            task_id = fields["data"]
        elif fields.get("event") in ("chunk", "end"):
            data.append(fields.get("data", ""))
        elif fields.get("event") == "error":
            return body
    result = json.loads("".join(data))
    output = result.get("output") or {}
    case = (output.get("metadata") or {}).get("case")
    if case == "long-refusal":
        result = {"ok": False, "error": "y" * LONG_OUTPUT, "reason": "input_validation"}
    elif case in CASES:
        output.update(CASES[case])
    else:
        return body
    return f"event: task_id\r\ndata: {task_id}\r\n\r\nevent: end\r\ndata: {json.dumps(result)}\r\n\r\n".encode()


def rewrite_prompt(body: bytes) -> bytes:
    blocks = json.loads(body)
    if any(block.get("text") == MALFORMED_PROMPT for block in blocks):
        return json.dumps([{"type": "text", "text": 5}]).encode()
    return body


class MalformAnswers:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        rewrite = rewrite_call if path.endswith("/call") else rewrite_prompt if path.endswith("/prompt") else None
        if rewrite is None:
            return await self.app(scope, receive, send)
        start, body = None, []

        async def buffered(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            new = rewrite(b"".join(body))
            headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
            if not path.endswith("/call"):
                headers.append((b"content-length", str(len(new)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": new, "more_body": False})

        await self.app(scope, receive, buffered)


class MalformingServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(MalformAnswers)


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = MalformingServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
