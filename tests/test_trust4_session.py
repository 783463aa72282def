"""Issue 40, the session's share: a restarted server is used again as soon as it answers (9),
credentials stay with the hosts named for the run when a snapshot's target moves (4, run time),
and what a server or an env's log carries stays bounded and readable (12: a huge prompt, bidi
controls, a secret across the log pump's pieces).

Real servers on loopback throughout. `tests/support/servers/session4_envs.py` is FAULT INJECTION
of server content (an env serving a huge prompt and bidi controls); the moved target's traffic
goes through a proxy variable to a loopback recording server (`tests/support/servers/session4_proxy.py`),
so the runtime addresses `10.99.0.1` while nothing leaves this machine.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading

import pytest
from orlgen.runtime.data.spec import Target
from orlgen.runtime.session import admission, breaker
from orlgen.runtime.session.local import _LINE, _pump
from orlgen.runtime.session.metrics import COUNTERS
from orlgen.serve import ServerProcess

from tests.support.envs.both import TASKS
from tests.support.modules import REPO
from tests.support.servers.both import BothServer
from tests.support.servers.session4_envs import BIDI_PROMPT, HUGE_PROMPT
from tests.support.waiting import wait_for

HOSTILE = "tests.support.servers.session4_envs:Echo"


# -- 9: a restarted server ------------------------------------------------------------------------


@pytest.fixture
def fresh_breakers(monkeypatch):
    """A cool-down far longer than the test: only a health probe can close the breaker in time."""
    monkeypatch.setenv(breaker.COOLDOWN_VAR, "600")
    breaker.forget()
    COUNTERS.take()
    yield
    breaker.forget()


@pytest.mark.slow  # a server killed, found dead (2 s of refused connections) and started again
def test_a_restarted_server_is_used_again_as_soon_as_its_health_answers(both_module, ors_kind, fresh_breakers):
    with BothServer(ors_kind) as server:
        env = both_module.BothEnv(base_url=server.url)
        assert env.reset(task_index=0).startswith("Task 0:"), env.error
        server.process.stop()  # killed mid-episode, as a crash
        assert env.guess(guess=5).startswith("Error: the environment failed")
        gate = breaker.for_env(admission.env_key(env._episode.connection))
        assert gate.state == "open" and gate.dead, (gate.state, env.error)

        env.reset(task_index=0)  # down: refused at once, nothing sent
        assert env.outcome == "env_error" and "circuit open" in env.error
        assert wait_for(lambda: gate.probes >= 1)  # the server is probed while it is down
        assert gate.state == "open"  # ... and a probe that finds nothing keeps the breaker open

        server.start()  # the same port
        assert wait_for(lambda: gate.state == "closed", seconds=30), "no probe closed the breaker"
        assert env.reset(task_index=0).startswith("Task 0:"), env.error
        assert env.submit(answer=TASKS["train"][0]["target"]) == "correct" and env.get_reward() == 1.0
    assert COUNTERS.take().get("breaker_rejections") == 1.0  # one reset refused, the one while down
    probes = gate.probes
    assert not wait_for(lambda: gate.probes > probes, seconds=1.5)  # a closed breaker is not probed


@pytest.mark.slow
def test_a_dead_server_is_probed_one_request_at_a_time_until_the_process_gives_up(both_module, fresh_breakers):
    """A server that never comes back: the probes go on, one in flight, paced by the interval;
    nothing else is sent (the breaker stays open, the cool-down long)."""
    with BothServer("openreward-sdk") as server:
        env = both_module.BothEnv(base_url=server.url)
        env.reset(task_index=0)
        server.process.stop()
        env.guess(guess=5)
    gate = breaker.for_env(admission.env_key(env._episode.connection))
    assert wait_for(lambda: gate.probes >= 2, seconds=10)
    first = gate.probes
    assert wait_for(lambda: gate.probes >= first + 2, seconds=10)
    assert gate.state == "open" and gate.watched  # one watch, still on
    assert gate.probes - first <= 2 + 10 / breaker.PROBE_EVERY  # paced: not a busy loop


def test_a_failing_env_on_a_live_server_is_not_probed(fresh_breakers, monkeypatch):
    """A breaker opened by failures (not by a dead server) waits out its cool-down: the server's
    health says nothing about an env that fails every session."""
    monkeypatch.setenv(breaker.FAILURES_VAR, "1")
    gate = breaker.for_env(("http://127.0.0.1:9", "echo"))
    gate.failed()
    assert gate.state == "open" and not gate.dead and not gate.watch()


CHILD = """
import json, os, sys
from orlgen.runtime.session import admission, breaker
from orlgen.runtime.session.connection import Connection
connection = Connection(url=sys.argv[1], catalog=None, env="echo", api_key=None)
gate = breaker.for_env(admission.env_key(connection))
admission.env_failed(connection, admission.ServerDead("gone"))
assert gate.watched
pid = os.fork()
if pid == 0:
    child_gate = breaker.for_env(admission.env_key(connection))
    os.write(1, json.dumps({"child": [child_gate.state, child_gate.watched]}).encode() + b"\\n")
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({"parent": [gate.state, gate.watched]}))
"""


def test_a_forked_child_starts_with_no_watch_of_its_parent(tmp_path):
    """The watch lives on the parent's breaker and loop: the child's breakers are new."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "http://127.0.0.1:9"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines == [{"child": ["closed", False]}, {"parent": ["open", True]}]


# -- 4 (run time): a moved target -----------------------------------------------------------------

MOVED = "http://10.99.0.1:8000"  # never reached: requests go to the loopback proxy below
KEY, TOKEN = "key-4a1f", "tok-77be"


@pytest.fixture(scope="module")
def header_log(tmp_path_factory):
    return tmp_path_factory.mktemp("headers4") / "headers.jsonl"


@pytest.fixture(scope="module")
def recording_proxy(header_log):
    """The echo env behind a middleware that records each request's credentials; it serves
    requests addressed to any host, as a forward proxy would pass them on."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORLGEN_HEADER_LOG", str(header_log))
        server = ServerProcess("examples.echo:Echo", entry="tests.support.servers.session4_proxy").start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def moved_env(echo_module, recording_proxy, header_log, monkeypatch):
    """`EchoEnv` of a snapshot resealed to `MOVED` (secret_names empty), its traffic proxied."""
    for name in ("http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, recording_proxy)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "")
    monkeypatch.delenv(echo_module.SPEC.env_var, raising=False)
    header_log.write_text("")
    spec = dataclasses.replace(echo_module.SPEC, target=Target("url", MOVED, "echo"), secret_names=())

    class MovedEnv(echo_module.EchoEnv, spec=spec):
        pass

    return MovedEnv


def play(env_class, header_log, **options) -> list[dict]:
    """One rollout; the credentials each of its requests carried."""
    env = env_class(api_key=KEY, secrets={"CUSTOM_TOKEN": TOKEN}, **options)
    assert env.reset(task_index=0).startswith("Call the echo tool"), env.error
    assert env.echo(text="hello") == "correct"
    env.get_reward()
    # The session's last request goes in the background: wait for it, so that it is counted here
    # and never lands in the next test's log.
    assert wait_for(lambda: '"/delete_session"' in header_log.read_text()), "the session was not deleted"
    # A keepalive ping (every 10 s, for every open session of the process) taken before an earlier
    # test's session was deleted can land after it, in this log: pings are left out.
    records = [json.loads(line) for line in header_log.read_text().splitlines()]
    records = [record for record in records if record["path"] != "/ping"]
    header_log.write_text("")
    assert records, "nothing reached the proxy"
    return records


def test_a_moved_target_gets_neither_the_key_nor_the_secrets(moved_env, header_log, caplog):
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        records = play(moved_env, header_log)
        play(moved_env, header_log)
    assert {r["x-api-key"] for r in records} == {None}
    assert {name for r in records for name in r["secrets"]} == set()
    warned = [r.getMessage() for r in caplog.records if "10.99.0.1" in r.getMessage()]
    assert len(warned) == 1, warned  # once per process, not at every reset
    assert "ORLGEN_ECHO_URL" in warned[0] and "base_url=" in warned[0]
    assert KEY not in warned[0] and TOKEN not in warned[0]


@pytest.mark.parametrize("how", ["base_url", "env_var"])
def test_a_target_named_for_the_run_gets_them(moved_env, header_log, monkeypatch, how):
    """The same host named by the user (`base_url=`, `ORLGEN_ECHO_URL`): the key and the secret go."""
    options = {"base_url": MOVED} if how == "base_url" else {}
    if how == "env_var":
        monkeypatch.setenv(moved_env.spec.env_var, MOVED)
    records = play(moved_env, header_log, **options)
    assert {r["x-api-key"] for r in records} == {KEY}
    assert {"CUSTOM_TOKEN", "api_key"} <= {name for r in records for name in r["secrets"]}


def test_a_well_known_secret_still_goes_where_its_domains_say():
    """On a moved target the rule is the table's (or a pair's): a vendor key is not sent to another
    host, and a pair that names the host goes."""
    from orlgen.runtime.ors import secrets

    given = {"OPENAI_API_KEY": "sk-1", "MINE": ("v", ["10.99.0.1"]), "CUSTOM": "c"}
    kept = secrets.for_unnamed_target(given, MOVED, api_key=None, how="base_url=")
    assert kept == {"MINE": ("v", ["10.99.0.1"])}


# -- 12: bounded and readable server text ---------------------------------------------------------


def test_a_20_million_character_prompt_is_cut_like_a_tool_output(echo_module, serve):
    env = echo_module.EchoEnv(base_url=serve(HOSTILE), on_drift="ignore", max_output_chars=1000)
    prompt = env.reset(task_index=0)
    assert env.outcome == "running", env.error
    assert prompt.startswith("x" * 1000) and len(prompt) < 1100
    assert f"[output cut: {HUGE_PROMPT - 1000} more characters (max_output_chars=1000)]" in prompt


def test_bidi_controls_reach_the_model_escaped_in_prompts_and_tool_output(echo_module, serve):
    env = echo_module.EchoEnv(base_url=serve(HOSTILE), on_drift="ignore")
    prompt = env.reset(task_index=1)
    assert prompt == BIDI_PROMPT.replace("\u202e", "\\u202e").replace("\u202c", "\\u202c")
    hidden = "a\u2066b\u2067c\u2068d\u2069e\u202af\u202bg\u200eh\u200fi\u061cj"
    output = env.echo(text=hidden)
    assert output == "a\\u2066b\\u2067c\\u2068d\\u2069e\\u202af\\u202bg\\u200eh\\u200fi\\u061cj", output
    assert env.last_output == output


def test_a_secret_across_the_log_pumps_pieces_is_masked(tmp_path):
    """A line longer than the pump's piece (1 MiB) with a secret across the boundary, and a
    multi-byte character across the next one: neither reaches the log whole or broken."""
    secret = "s3cr3t-value-0123456789"
    line = "a" * (_LINE - 7) + secret + "é" * (_LINE // 2) + "tail " + secret + "\n"
    log = tmp_path / "server.log"
    log.touch()
    read, write = os.pipe()
    pump = threading.Thread(target=_pump, args=(os.fdopen(read, "rb"), log, [secret]))
    pump.start()
    with os.fdopen(write, "wb") as sink:
        sink.write(line.encode())
        sink.write(b"next line\n")
    pump.join(30)
    written = log.read_text()
    assert secret not in written and written.count("***") == 2
    assert written == line.replace(secret, "***") + "next line\n"
