"""`python -m tests.support.servers.header module:Env PORT`: a real ORS server that records, for every
request, the credentials it carried: the `X-API-Key` and `Authorization` headers and the names
(and API-key values) of the `X-Secrets` header. FAULT INJECTION's harmless cousin: an ASGI
middleware on the SDK's own app observes, and changes nothing. Records are JSON lines appended to
the file named by `ORLGEN_HEADER_LOG`."""

from __future__ import annotations

import base64
import json
import os
import sys

import openreward.environments

KEY_SECRETS = ("api_key", "OPENREWARD_API_KEY")


class RecordHeaders:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
            secrets = json.loads(base64.b64decode(headers["x-secrets"])) if "x-secrets" in headers else {}
            record = {
                "path": scope["path"],
                "x-api-key": headers.get("x-api-key"),
                "authorization": headers.get("authorization"),
                "secrets": sorted(secrets),
                "key_secrets": {name: secrets[name]["value"] for name in KEY_SECRETS if name in secrets},
            }
            with open(os.environ["ORLGEN_HEADER_LOG"], "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
        await self.app(scope, receive, send)


class RecordingServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(RecordHeaders)


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = RecordingServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
