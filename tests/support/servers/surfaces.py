"""`python -m tests.support.servers.surfaces module:Env PORT`: a real ORS server that records what
each request asked for, and FAULT INJECTION on demand (here, and said so).

Records (JSON lines appended to the file `ORLGEN_SURFACE_LOG` names): the method and path of every
request and, for `/create_session` and `/create`, the body's `toolset_name` and the keys of its
`env` (the SDK's `env_overrides`) with a sha256 of each value, never the value itself.

With `ORLGEN_PAYMENT_REQUIRED=1` every request is answered 402, as an unfunded platform account
is on every endpoint, discovery included.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import openreward.environments

from tests.support.servers.asgi import answer


class RecordRequests:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if os.environ.get("ORLGEN_PAYMENT_REQUIRED") == "1":
            return await answer(send, 402, {"detail": "Payment Required"})
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self._record(scope, body)
        sent = False

        async def replay():
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    @staticmethod
    def _record(scope, body: bytes) -> None:
        record = {"method": scope["method"], "path": scope["path"]}
        if scope["path"] in ("/create_session", "/create") and body:
            data = json.loads(body)
            record["toolset_name"] = data.get("toolset_name")
            record["env"] = {
                key: hashlib.sha256(value.encode()).hexdigest() for key, value in data.get("env", {}).items()
            }
        with open(os.environ["ORLGEN_SURFACE_LOG"], "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


class RecordingServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(RecordRequests)


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = RecordingServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
