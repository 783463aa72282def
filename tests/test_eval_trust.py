"""`orlgen eval` treats its model endpoint as it treats an ORS server: untrusted.

The environment is the real echo ORS server (`ServerProcess`); the endpoint is a loopback HTTP
server. Where it misbehaves (redirects, trickles, floods, quotes the key, fails every request) it is
a fault injection, and says so: `Hostile` runs a plain `http.server` whose every answer is decided
by a test's `behave` function, with the scripted policy of the other eval tests for honest answers.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bench.chat_server import answer, call
from tests.support.cli import invoke
from tests.support.models.scripted_policy import scripted
from tests.support.modules import REPO

KEY = "sk-eval-key-5c1d9e"
ECHO = str(REPO / "generated" / "echo.py")

# behave(handler, method, path, body) answers the request itself through the handler, or returns
# a message dict for an honest chat completion.
Behave = Callable[[BaseHTTPRequestHandler, str, str, Any], "dict[str, Any] | None"]


class Hostile:
    """A loopback OpenAI-compatible endpoint that does whatever `behave` says (fault injection).
    Keeps every request's method, path and `Authorization` header."""

    def __init__(self, behave: Behave) -> None:
        self.behave = behave
        self.requests: list[tuple[str, str, str | None]] = []
        self.url = ""

    @contextmanager
    def serving(self) -> Iterator[Hostile]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the body ends when the connection closes

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self, method: str) -> None:
                owner.requests.append((method, self.path, self.headers.get("Authorization")))
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                try:
                    message = owner.behave(self, method, self.path, body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up: the point of some tests
                    return
                if message is not None:
                    reply(self, 200, {"choices": [{"index": 0, "message": message}]})

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()


def reply(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    for name, value in {
        "Content-Type": "application/json",
        "Content-Length": str(len(data)),
        **(headers or {}),
    }.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)


def honest(handler: BaseHTTPRequestHandler, method: str, path: str, body: Any) -> dict[str, Any] | None:
    if method == "GET":
        reply(handler, 200, {"object": "list", "data": []})
        return None
    return scripted(body)


def target_of(body: Any) -> str:
    """The echo task's target text, read from the prompt (tells tasks apart)."""
    return body["messages"][0]["content"]


def eval_args(url: str, echo_url: str, *more: object) -> list[object]:
    return [ECHO, "--base-url", url, "--model", "m", "--env-url", echo_url, *more]


def rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


# --- the key stays with its origin -------------------------------------------------------------


def test_a_redirect_to_another_origin_never_receives_the_key(echo_url):
    with Hostile(honest).serving() as elsewhere:

        def redirect(handler, method, path, body):
            handler.send_response(302)
            handler.send_header("Location", elsewhere.url.removesuffix("/v1") + path)
            handler.send_header("Content-Length", "0")
            handler.end_headers()

        with Hostile(redirect).serving() as endpoint:
            result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 1), env={"OPENAI_API_KEY": KEY})
    assert endpoint.requests and all(auth == f"Bearer {KEY}" for _, _, auth in endpoint.requests)
    assert elsewhere.requests == [], "the other origin was asked"
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert "redirected to another origin (http://127.0.0.1:" in result.stderr and "refused" in result.stderr


def test_a_redirect_within_the_origin_is_followed(echo_url):
    def moved(handler, method, path, body):
        if path.startswith("/v1/"):
            handler.send_response(307)
            handler.send_header("Location", path.replace("/v1/", "/v2/", 1))
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return None
        return honest(handler, method, path, body)

    with Hostile(moved).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 2, "--format", "json"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["splits"][0]["scored"] == 2
    assert ("POST", "/v2/chat/completions", None) in endpoint.requests


# --- a turn is bounded in time and size, and in tool calls -------------------------------------


@pytest.mark.slow
def test_a_trickling_answer_ends_at_the_turn_timeout(echo_url):
    def trickle(handler, method, path, body):
        if method == "POST" and "'orlgen'" in target_of(body):  # task 1 only
            handler.send_response(200)
            handler.send_header("Content-Length", "400")
            handler.end_headers()
            for _ in range(400):  # a byte every 50 ms: each read is quick, the answer takes 20 s
                handler.wfile.write(b" ")
                handler.wfile.flush()
                time.sleep(0.05)
            return None
        return honest(handler, method, path, body)

    with Hostile(trickle).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 2, "--turn-timeout", 1.5, "--out", "-"))
    assert result.exit_code == 0, result.output
    by_task = {row["task_index"]: row for row in rows(result.stdout)}
    assert by_task[0]["reward"] == 1.0
    assert by_task[1]["outcome"] == "policy_error"
    assert by_task[1]["reason"] == "no answer within --turn-timeout 1.5 s"
    assert by_task[1]["timings"]["model_s"] < 10  # not the 20 s the body takes


def test_an_answer_past_the_size_bound_is_refused_as_it_arrives(echo_url):
    def flood(handler, method, path, body):
        if method == "POST" and "'orlgen'" in target_of(body):  # task 1: 40 MiB, its length unannounced
            handler.send_response(200)
            handler.end_headers()
            handler.wfile.write(b'{"choices": [{"message": {"role": "assistant", "content": "')
            chunk = b"x" * 2**20
            for _ in range(40):
                handler.wfile.write(chunk)
            handler.wfile.write(b'"}}]}')
            return None
        return honest(handler, method, path, body)

    with Hostile(flood).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 2, "--out", "-"))
    assert result.exit_code == 0, result.output
    by_task = {row["task_index"]: row for row in rows(result.stdout)}
    assert by_task[0]["reward"] == 1.0 and by_task[1]["outcome"] == "policy_error"
    assert by_task[1]["reason"] == "the endpoint failed: the endpoint's answer exceeds the 33554432-byte limit"


def test_tool_calls_past_the_cap_are_not_run_and_count_as_failed(echo_url):
    def spree(handler, method, path, body):
        if method == "GET":
            return honest(handler, method, path, body)
        if any(message["role"] == "assistant" for message in body["messages"]):
            return answer("done")
        message = call("echo", {"text": "x"}, 0)
        message["tool_calls"] = [dict(message["tool_calls"][0], id=f"call_{i}") for i in range(10)]
        return message

    with Hostile(spree).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 1, "--max-tool-calls", 3, "--out", "-"))
    assert result.exit_code == 0, result.output
    (row,) = rows(result.stdout)
    # 7 never run; of the 3 run, the first ends the echo episode and the other two are refused.
    assert (row["tool_calls"], row["tool_errors"]) == (10, 9)
    assert len(row["messages"][1]["tool_calls"]) == 3
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "tool", "tool"]


# --- where the rows go ----------------------------------------------------------------------------


def test_out_dash_is_stdout_and_the_table_goes_to_stderr(echo_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Hostile(honest).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 2, "--out", "-"))
    assert result.exit_code == 0, result.output
    assert sorted(row["task_index"] for row in rows(result.stdout)) == [0, 1]
    assert "echo / train" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no file named `-`


def test_out_refuses_a_symbolic_link(echo_url, tmp_path):
    kept = tmp_path / "elsewhere.txt"
    kept.write_text("keep me\n")
    link = tmp_path / "rows.jsonl"
    link.symlink_to(kept)
    with Hostile(honest).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 1, "--out", link))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert f"--out {link} is a symbolic link: refused" in result.stderr
    assert kept.read_text() == "keep me\n" and link.is_symlink()


# --- secrets are masked in the rows ------------------------------------------------------------


def test_an_endpoint_quoting_the_key_is_masked_in_the_rows(echo_url):
    def quoting(handler, method, path, body):
        if method == "POST" and "'orlgen'" in target_of(body):
            auth = handler.headers.get("Authorization", "")
            reply(handler, 400, {"error": f"invalid key {auth.removeprefix('Bearer ')}"})
            return None
        return honest(handler, method, path, body)

    with Hostile(quoting).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 2, "--out", "-"), env={"OPENAI_API_KEY": KEY})
    assert result.exit_code == 0, result.output
    assert KEY not in result.stdout
    (failed,) = [row for row in rows(result.stdout) if row["outcome"] == "policy_error"]
    assert failed["reason"] == 'the endpoint answered HTTP 400: {"error": "invalid key ***"}'


# --- one rule for -n; an endpoint that answers nothing stops the run ---------------------------


def test_n_past_the_split_is_the_error_build_dataset_gives(echo_url, echo_module):
    from orlgen.runtime import DatasetError

    with pytest.raises(DatasetError) as caught:
        echo_module.build_dataset("train", num_tasks=9)
    with Hostile(honest).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 9))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr == f"orlgen: error: echo: {caught.value}\n"
    assert endpoint.requests == []  # refused before anything ran


def test_an_endpoint_failing_every_request_stops_the_run_with_exit_2(echo_url, tmp_path):
    def broken(handler, method, path, body):
        if method == "GET":
            return honest(handler, method, path, body)
        reply(handler, 404, {"error": "no such model: m"})
        return None

    out = tmp_path / "rows.jsonl"
    with Hostile(broken).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-k", 4, "--concurrency", 2, "--out", out))
    asked = sum(method == "POST" for method, _, _ in endpoint.requests)
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("orlgen: error: the model endpoint answered none of ")
    assert 'the endpoint answered HTTP 404: {"error": "no such model: m"}' in result.stderr
    assert asked < 32 and 3 <= len(rows(out.read_text())) <= asked  # stopped early; what finished is kept

    # The rule is "no rollout could ask the model", not "some failed": one answered turn is enough.
    def mostly_broken(handler, method, path, body):
        if method == "POST" and "'hello'" not in target_of(body):  # only task 0 is answered
            reply(handler, 400, {"error": "nope"})
            return None
        return honest(handler, method, path, body)

    with Hostile(mostly_broken).serving() as endpoint:
        result = invoke("eval", *eval_args(endpoint.url, echo_url, "-n", 4, "--concurrency", 1, "--format", "json"))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["splits"][0]["unscored"] == {"policy_error": 3}
