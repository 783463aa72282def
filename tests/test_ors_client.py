"""orlgen's own ORS client (`orlgen.runtime.ors.client`) on the wire, against the SDK's real `Server`.
SDK-specific by construction: its fault middleware wraps the SDK's app and counts what reached it.
The faults whose outcome could differ by server (a resumed stream, long outputs, refused calls,
`503 starting`, a stopped server at the default hang bound, a 25 s call kept alive by pings) run on
both ORS implementations in `tests/test_two_servers.py`.

Faults come from `tests/support/wire_faults.py` (an ASGI middleware on the SDK's app: a stream
cut after its `task_id`, injected statuses) and from signals sent to the server process (SIGKILL,
SIGSTOP). The env (`tests/support/wire_env.py`) counts tool runs and sessions in files, so the
server's side is read from outside its process. The tables the runtime owns (secrets, platform
addresses) are held equal to the SDK's.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request

import pytest
from orlgen.runtime.ors import client as ors
from orlgen.runtime.ors import retry
from orlgen.runtime.ors import secrets as runtime_secrets
from orlgen.runtime.session import breaker
from orlgen.serve import ServerProcess

from tests.support.modules import generated

ENV = "tests.support.wire_env:Ticker"


@pytest.fixture(scope="module")
def ticker(tmp_path_factory):
    return generated(ENV, tmp_path_factory.mktemp("ticker"))


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The env's counters: tool runs (`tick`) and sessions opened/closed, read from outside."""
    monkeypatch.setenv("ORLGEN_TICK_FILE", str(tmp_path / "ticks"))
    monkeypatch.setenv("ORLGEN_COUNT_FILE", str(tmp_path / "counts.json"))
    breaker.forget()  # each test's server is a new env at a new port; start closed
    yield tmp_path
    breaker.forget()


def ticks(files) -> int:
    return int((files / "ticks").read_text()) if (files / "ticks").exists() else 0


def counts(files) -> dict:
    path = files / "counts.json"
    return json.loads(path.read_text()) if path.exists() else {"opened": 0, "closed": 0}


@pytest.fixture
def faulty(files):
    with ServerProcess(ENV, entry="tests.support.wire_faults") as server:
        yield server


def arm(server, what: str, **query) -> None:
    query_text = "&".join(f"{key}={value}" for key, value in query.items())
    urllib.request.urlopen(urllib.request.Request(f"{server.url}/_fault/{what}?{query_text}", method="POST"), timeout=5)


def calls(server) -> int:
    return json.loads(urllib.request.urlopen(f"{server.url}/_stats", timeout=5).read())["calls"]


# -- the stream --------------------------------------------------------------------------------


def test_a_stream_cut_after_its_task_id_is_resumed_and_the_tool_runs_once(ticker, faulty, files):
    env = ticker.TickerEnv(base_url=faulty.url)
    assert env.reset(task_index=0) == "ticker task 0", env.error
    arm(faulty, "cut")
    assert env.tick() == "tick 1", env.error
    assert (env.outcome, env.get_reward()) == ("finished", 1.0)
    assert ticks(files) == 1  # the re-sent call carried the task_id: the server replayed the one run
    assert calls(faulty) == 2  # the cut call, and its resumption


def test_a_60000_character_output_arrives_whole(ticker, faulty, files):
    env = ticker.TickerEnv(base_url=faulty.url)
    env.reset(task_index=1)
    text = env.big(chars=60_000)
    assert text == "".join(str(i % 10) for i in range(60_000))  # 15 chunks of 4096, none lost or doubled
    assert env.outcome == "running"


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (404, "the server no longer has the session (404: injected 404)"),
        (410, "the server no longer has the session (410: injected 410)"),
        (422, "StatusError: 422: injected 422"),
        (402, "402 Payment Required: the OpenReward account of this API key has no credit left"),
        (500, "StatusError: 500: injected 500"),
    ],
)
def test_an_error_status_on_a_call_ends_the_rollout_unscored_unretried(ticker, faulty, files, code, says):
    env = ticker.TickerEnv(base_url=faulty.url)
    env.reset(task_index=0)
    arm(faulty, "status", code=code, n=5)
    text = env.tick()
    assert text.startswith("Error: the environment failed") and says in env.error, env.error
    assert (env.outcome, env.get_reward(), env._episode.open) == ("env_error", None, False)
    assert calls(faulty) == 1 and ticks(files) == 0  # asked once, never run


def test_a_deleted_session_is_a_real_404(ticker, faulty, files):
    env = ticker.TickerEnv(base_url=faulty.url)
    env.reset(task_index=0)
    sid = env._episode._session.sid
    request = urllib.request.Request(f"{faulty.url}/delete", method="POST", headers={"X-Session-ID": sid})
    urllib.request.urlopen(request, timeout=5)  # the server drops the session under the rollout
    env.tick()
    assert env.outcome == "env_error" and "no longer has the session (404" in env.error, env.error


@pytest.mark.slow  # rides out two Retry-After: 1
def test_503_starting_is_ridden_out_honouring_retry_after(ticker, faulty, files):
    env = ticker.TickerEnv(base_url=faulty.url)
    env.reset(task_index=0)
    arm(faulty, "status", code=503, n=2)
    started = time.monotonic()
    assert env.tick() == "tick 1", env.error
    assert time.monotonic() - started >= 2.0  # two waits of Retry-After: 1 s
    assert (calls(faulty), ticks(files)) == (3, 1)


# -- dead and hung servers -----------------------------------------------------------------------


def _call_in_thread(call):
    box = {}

    def run():
        started = time.monotonic()
        box["answer"] = call()
        box["ended"] = time.monotonic()
        box["took"] = box["ended"] - started

    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


@pytest.mark.slow  # waits for a killed server to be found dead
def test_a_killed_server_ends_the_rollout_unscored_within_8_s_and_the_others_at_their_next_call(ticker, files):
    server = ServerProcess(ENV).start()
    try:
        env, other = ticker.TickerEnv(base_url=server.url), ticker.TickerEnv(base_url=server.url)
        env.reset(task_index=0)
        other.reset(task_index=1)
        thread, box = _call_in_thread(lambda: env.nap(seconds=60))
        time.sleep(1.0)
        os.kill(server.pid, signal.SIGKILL)
        killed = time.monotonic()
        thread.join(30)
        assert box["ended"] - killed <= 8.0, box
        assert env.outcome == "env_error" and env.get_reward() is None
        other.nap(seconds=0)  # the breaker knew: nothing was sent (the server is gone, so its error says so)
        assert other.outcome == "env_error" and "circuit open: the server was found dead" in other.error
    finally:
        server.stop()


@pytest.mark.slow  # waits out the hang bound
def test_a_stopped_server_ends_the_rollout_unscored_at_the_hang_bound(ticker, files, monkeypatch):
    """The bound lowered to 4 s; the default (30 s) on both servers is test_two_servers.py's."""
    hang, bound = "4", 6.0
    monkeypatch.setenv(ors.HANG_VAR, hang)
    server = ServerProcess(ENV).start()
    try:
        env = ticker.TickerEnv(base_url=server.url)
        env.reset(task_index=0)
        thread, box = _call_in_thread(lambda: env.nap(seconds=60))
        time.sleep(1.0)
        os.kill(server.pid, signal.SIGSTOP)
        stopped = time.monotonic()
        thread.join(30)
        assert box["ended"] - stopped <= bound, box
        assert env.outcome == "env_error" and f"Hung: no byte from the server for {hang} s" in env.error
    finally:
        os.kill(server.pid, signal.SIGCONT)
        server.stop()


# -- exit paths and imports ----------------------------------------------------------------------

CHILD = """
import sys, time
sys.path.insert(0, {out!r})
import {module} as m
envs = [m.TickerEnv(base_url={url!r}) for _ in range(3)]
"""
# The three adapters' resets, on the main thread or, as TRL's async worker plays them (adapters
# made on its main thread, every call on its tool pool), on other threads.
PLAYED_ON = {
    "main thread": """
for i, env in enumerate(envs):
    assert env.reset(task_index=i) == f"ticker task {i}", env.error
""",
    "a pool": """
from concurrent.futures import ThreadPoolExecutor
with ThreadPoolExecutor(3) as pool:
    prompts = list(pool.map(lambda i: envs[i].reset(task_index=i), range(3)))
assert prompts == [f"ticker task {i}" for i in range(3)], [env.error for env in envs]
""",
}


def _child(ticker, server, after: str, played_on: str = "main thread") -> subprocess.Popen:
    out = os.path.dirname(ticker.__file__)
    code = CHILD.format(out=out, module=ticker.__name__, url=server.url) + PLAYED_ON[played_on] + textwrap.dedent(after)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow  # a child interpreter
@pytest.mark.parametrize("played_on", list(PLAYED_ON))
def test_sigterm_deletes_the_open_sessions(ticker, faulty, files, played_on):
    """TRL's AsyncRolloutWorker.stop() sends SIGTERM to its child after 15 s, where every adapter
    call runs on a pool thread: the handler must be in place all the same."""
    child = _child(ticker, faulty, 'print("ready", flush=True)\ntime.sleep(60)', played_on)
    assert child.stdout.readline().strip() == "ready", child.stderr.read()
    assert counts(files) == {"opened": 3, "closed": 0}
    child.send_signal(signal.SIGTERM)  # as TRL's AsyncRolloutWorker.stop() does
    assert child.wait(20) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 5
    while counts(files)["closed"] < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert counts(files) == {"opened": 3, "closed": 3}


@pytest.mark.slow  # a child interpreter
def test_a_full_rollout_never_imports_openreward(ticker, faulty, files):
    after = """
    assert envs[0].tick() == "tick 1", envs[0].error
    assert envs[0].get_reward() == 1.0
    leaked = sorted(name for name in sys.modules if name.split(".")[0] == "openreward")
    print(json.dumps(leaked) if False else ",".join(leaked) or "none", flush=True)
    """
    child = _child(ticker, faulty, after)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.strip() == "none"


def test_secret_values_are_masked_in_what_reaches_the_model(ticker, faulty, files):
    env = ticker.TickerEnv(base_url=faulty.url, secrets={"JUDGE_KEY": "sekrit-123", "OPENAI_API_KEY": "sk-abc-999"})
    env.reset(task_index=0)
    assert env.leak() == "values: ***, ***"


# -- tables and rules the runtime owns -------------------------------------------------------------


def test_the_well_known_secrets_table_equals_the_sdks():
    from openreward.api.sandboxes.secrets import WELL_KNOWN_SECRETS

    assert runtime_secrets.WELL_KNOWN_SECRETS == WELL_KNOWN_SECRETS


def test_the_secrets_header_is_the_sdks():
    from openreward.api.sandboxes.secrets import augment_secrets_with_api_key, build_secrets_header

    given = {"OPENAI_API_KEY": "sk-1", "CUSTOM": ("v", ["example.com"])}
    ours = runtime_secrets.with_api_key(
        runtime_secrets.allowed(given, "https://sessions.openreward.ai"),
        "key",
        "https://sessions.openreward.ai",
        "https://api.openreward.ai",
    )
    theirs = augment_secrets_with_api_key(given, "key", "https://sessions.openreward.ai", "https://api.openreward.ai")
    assert json.loads(base64.b64decode(runtime_secrets.header(ours))) == json.loads(
        base64.b64decode(build_secrets_header(theirs))
    )


def test_a_secret_goes_only_to_a_host_its_domains_name(caplog):
    chosen = runtime_secrets.allowed({"OPENAI_API_KEY": "sk-1", "CUSTOM": "c"}, "https://env.example.org")
    assert set(runtime_secrets.for_host(chosen, "https://env.example.org", platform=False)) == {"CUSTOM"}
    assert "secret OPENAI_API_KEY not sent to env.example.org" in caplog.text and "sk-1" not in caplog.text
    assert set(runtime_secrets.for_host(chosen, "http://127.0.0.1:8080", platform=False)) == {
        "OPENAI_API_KEY",
        "CUSTOM",
    }
    assert set(runtime_secrets.for_host(chosen, "https://sessions.openreward.ai", platform=True)) == {
        "OPENAI_API_KEY",
        "CUSTOM",
    }


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"OPENREWARD_URL": "https://staging.example.com"},
        {"OPENREWARD_SESSION_URL": "http://127.0.0.1:9000"},
        {"OPENREWARD_URL": "https://x.example.com", "OPENREWARD_API_URL": "https://api.other.example"},
        {"OPENREWARD_URL": "http://localhost:8080", "OPENREWARD_SESSION_URL": "", "OPENREWARD_API_URL": ""},
    ],
)
def test_platform_addresses_resolve_as_the_sdks(monkeypatch, variables):
    from openreward import AsyncOpenReward

    for name in ("OPENREWARD_URL", "OPENREWARD_SESSION_URL", "OPENREWARD_API_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    sdk = AsyncOpenReward(api_key="k")
    assert ors.platform_urls() == (sdk.session_base_url, sdk.base_url)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("3", 3.0), (None, None), ("soon", None), ("-1", None), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)],
)
def test_retry_after_is_read_as_seconds_or_an_http_date(value, seconds):
    assert retry.parse_retry_after(value) == seconds


def test_retry_after_as_a_future_http_date():
    from email.utils import formatdate

    assert 8.0 <= retry.parse_retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10.0
