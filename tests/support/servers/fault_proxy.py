"""FAULT INJECTION: an HTTP server on loopback that stands in front of a real ORS server.

Every request is forwarded to the real server unchanged, unless a rule for its path (matched by
suffix, e.g. "/tools") answers instead. Rules play a hostile or broken server: huge answers,
answers that trickle one byte at a time, wrong counts, escape sequences in error text. Tests
that use it say which rule they install. Only plain JSON endpoints are proxied whole (capture
tests through it run with `probes=0`, so no session events stream through it).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Rule = Callable[["Handler", Callable[[], Any]], None]  # (handler, fetch the real answer's JSON)


class Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urllib.parse.urlsplit(self.path).path
        self.server.seen.append(path)
        rule = next((rule for suffix, rule in self.server.rules.items() if path.endswith(suffix)), None)
        if rule is None:
            status, data = self._forward(body)
            self.send(status, data)
        else:
            rule(self, lambda: json.loads(self._forward(body)[1]))

    def _forward(self, body: bytes) -> tuple[int, bytes]:
        upstream = http.client.HTTPConnection(self.server.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        upstream.request(self.command, self.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        upstream.close()
        return response.status, data

    def send(self, status: int, data: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, value: Any, status: int = 200) -> None:
        self.send(status, json.dumps(value).encode())

    def send_chunked(self, chunks: Any, pause: float = 0.0) -> None:
        """A 200 JSON answer without a Content-Length, streamed from `chunks` (bytes)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in chunks:
                if self.server.closing.is_set():
                    return
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
                time.sleep(pause)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client gave up: that is what the test wants
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up mid-answer is what these tests provoke

    upstream: str
    rules: dict[str, Rule]
    seen: list[str]
    closing: threading.Event


class FaultProxy:
    """`with FaultProxy(real_url, {"/tools": rule}) as proxy:` serves on `proxy.url`."""

    def __init__(self, upstream_url: str, rules: dict[str, Rule]) -> None:
        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.upstream = urllib.parse.urlsplit(upstream_url).netloc
        self.server.rules = rules
        self.server.seen = []
        self.server.closing = threading.Event()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def seen(self) -> list[str]:
        """Paths requested so far."""
        return self.server.seen

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.closing.set()
        self.server.shutdown()
        self.server.server_close()
