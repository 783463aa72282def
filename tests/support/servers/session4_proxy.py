"""`python -m tests.support.servers.session4_proxy module:Env PORT`: the credential-recording ORS server
of `tests/support/servers/header.py`, also answering as a forward proxy: a request whose target is
an absolute URL (`POST http://10.99.0.1:8000/create_session`, what a client sends through
`http_proxy`) is served as the path it names. So a test can point the runtime at a remote-looking
host and see what it would send there, while every byte stays on loopback. FAULT INJECTION's
harmless cousin: the env and the SDK's server are untouched."""

from __future__ import annotations

import sys
import urllib.parse

import openreward.environments

from tests.support.servers.header import RecordHeaders


class ForwardProxy:
    """Serve an absolute-form request target as its path (the host it named is dropped)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and "://" in scope["path"]:
            path = urllib.parse.urlsplit(scope["path"]).path or "/"
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await self.app(scope, receive, send)


class ProxyingServer(openreward.environments.Server):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.app.add_middleware(RecordHeaders)
        self.app.add_middleware(ForwardProxy)  # outermost: the recorder sees the served path


if __name__ == "__main__":
    from orlgen.serve import main

    openreward.environments.Server = ProxyingServer  # `orlgen.serve.serving` builds its server from here
    main(sys.argv[1:])
