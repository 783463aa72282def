"""`python -m tests.support.servers.peers module:Env PORT`: a real ORS server that records, for every
request, its path and the client's port, which names the TCP connection the request came over.
An ASGI middleware on the SDK's own app that observes and changes nothing; records are JSON lines
appended to the file named by `ORLGEN_PEER_LOG`. One fault to inject: `ORLGEN_PEER_HOLD=<path>`
holds that path's requests, once recorded, until the file `<ORLGEN_PEER_LOG>.release` exists
(at most 10 s): a slow answer whose wait a test can see."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import openreward.environments


class RecordPeers:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            with open(os.environ["ORLGEN_PEER_LOG"], "a", encoding="utf-8") as log:
                log.write(json.dumps({"path": scope["path"], "port": scope["client"][1]}) + "\n")
            if scope["path"] == os.environ.get("ORLGEN_PEER_HOLD"):
                await _released(os.environ["ORLGEN_PEER_LOG"] + ".release")
        await self.app(scope, receive, send)


async def _released(path: str) -> None:
    for _ in range(1000):
        if os.path.exists(path):
            return
        await asyncio.sleep(0.01)


class RecordingServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(RecordPeers)


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = RecordingServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
