"""Keys only where they belong, and redirects kept to one origin.

The echo env is served by the real SDK server under `tests/support/servers/header.py` (an ASGI middleware
that records the credentials each request carried). Redirects are FAULT INJECTION:
`tests/support/servers/fault_proxy.py` stands in front of the real server and answers one path with a 307 to a
second loopback server (another port: another origin), which records whatever reaches it.
"""

from __future__ import annotations

import json

import pytest
from orlgen.capture.live import CaptureOptions, capture
from orlgen.serve import ServerProcess

from tests.support.cli import invoke
from tests.support.servers.fault_proxy import FaultProxy

PLATFORM_KEY = "platform-key-9c1e"


@pytest.fixture(scope="module")
def header_log(tmp_path_factory):
    return tmp_path_factory.mktemp("headers") / "headers.jsonl"


@pytest.fixture(scope="module")
def recording_echo(header_log):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORLGEN_HEADER_LOG", str(header_log))
        server = ServerProcess("examples.echo:Echo", entry="tests.support.servers.header").start()
    try:
        yield server.url
    finally:
        server.stop()


def keys_sent(header_log) -> set:
    """The `X-API-Key` values of the requests recorded since the last call (None: no header)."""
    records = [json.loads(line) for line in header_log.read_text().splitlines()] if header_log.exists() else []
    header_log.write_text("")
    assert records and {r["authorization"] for r in records} == {None}
    return {r["x-api-key"] for r in records}


@pytest.mark.slow
def test_a_capture_sends_the_platform_key_to_the_platform_only(recording_echo, header_log, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENREWARD_API_KEY", PLATFORM_KEY)
    header_log.write_text("")
    result = invoke("snapshot", recording_echo, "--probes", "1", "--out", str(tmp_path / "a"))
    assert result.exit_code == 0, result.output
    assert keys_sent(header_log) == {None}

    # a key given explicitly goes to the URL it was given for
    result = invoke(
        "snapshot", recording_echo, "--secret", "api_key=mine", "--probes", "1", "--out", str(tmp_path / "b")
    )
    assert result.exit_code == 0, result.output
    assert keys_sent(header_log) == {"mine"}

    # the same server as the platform (the SDK's session host pointed at it): the key goes there,
    # along the server's own redirects (a path without an env key is redirected to the env: same origin)
    monkeypatch.setenv("OPENREWARD_SESSION_URL", recording_echo)
    capture("Acme/echo", CaptureOptions(probes=1, tasks="none"))
    assert keys_sent(header_log) == {PLATFORM_KEY}


def test_every_reset_of_a_url_adapter_keeps_the_platform_key(echo_module, recording_echo, header_log, monkeypatch):
    monkeypatch.setenv("OPENREWARD_API_KEY", PLATFORM_KEY)
    header_log.write_text("")
    env = echo_module.EchoEnv(base_url=recording_echo)
    for index in (0, 1):
        env.reset(task_index=index)
        assert env.outcome == "running", env.error
        env.echo(text="hi")
    env.get_reward()
    assert keys_sent(header_log) == {None}


# --------------------------------------------------------------------------------------------
# redirects to another origin
# --------------------------------------------------------------------------------------------


@pytest.fixture
def elsewhere(echo_url):
    """Another origin (another port), recording every request that reaches it."""
    reached: list[dict] = []

    def record(handler, fetch):
        reached.append({"path": handler.path, **{k.lower(): v for k, v in handler.headers.items()}})
        handler.send_json({"detail": "not here"}, status=404)

    with FaultProxy(echo_url, {"": record}) as server:
        server.reached = reached
        yield server


def redirect_to(server):
    def rule(handler, fetch):
        handler.send_response(307)
        handler.send_header("Location", f"{server.url}{handler.path}")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return rule


@pytest.mark.parametrize("path", ["/splits", "/list_environments"])
def test_a_capture_refuses_a_redirect_to_another_origin(echo_url, elsewhere, tmp_path, path):
    with FaultProxy(echo_url, {path: redirect_to(elsewhere)}) as proxy:
        args = ["snapshot", proxy.url, "--secret", "api_key=given-key", "--probes", "0", "--out", str(tmp_path)]
        result = invoke(*args) if path == "/list_environments" else invoke(*args, "--env", "echo")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"to another origin ({elsewhere.url}/" in result.stderr and result.stderr.endswith(": refused\n")
    assert elsewhere.reached == [], "nothing, least of all the key, reached the other origin"
    assert list(tmp_path.iterdir()) == []


def test_an_adapter_refuses_a_redirect_to_another_origin(echo_module, echo_url, elsewhere):
    with FaultProxy(echo_url, {"/call": redirect_to(elsewhere)}) as proxy:
        env = echo_module.EchoEnv(base_url=proxy.url, api_key="given-key")
        env.reset(task_index=0)
        assert env.outcome == "running", env.error
        answer = env.echo(text="hi")
    assert env.outcome == "env_error" and env.reward is None
    assert "to another origin" in env.error and "refused" in answer
    assert elsewhere.reached == []
