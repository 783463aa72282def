"""Issue 40, wire items: what the ORS client re-sends, how big one server event may be, how long
a session may take to be built, and how secrets reach either server implementation.

Real servers on loopback (both implementations where the item concerns the server), through the
generated adapter's public API or the runtime's client. FAULT INJECTION where said: the gateway
middleware (`tests/support/servers/wire4_gateway.py`) forwards a request and answers 502 in place
of the app's reply; the SSE parser (ours) is fed a hostile stream directly.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.support.envs.both import TASKS
from tests.support.servers.both import BothServer

GATEWAY = "tests.support.servers.wire4_gateway:ForwardThen502"
TARGET = TASKS["train"][0]["target"]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module", params=("openreward-sdk", "ors-sdk"))
def gateway(request):
    """FAULT INJECTION: either server behind a gateway that runs a request and answers 502."""
    with BothServer(request.param, (GATEWAY,)) as server:
        yield server


# Item 6: a POST that reached the env is not sent again on 502/504.


def test_a_tool_call_answered_502_after_it_ran_runs_the_tool_once(both_module, gateway):
    env = both_module.BothEnv(base_url=gateway.url)
    assert env.reset(task_index=0).startswith("Task 0:"), env.error
    lost = _get(f"{gateway.url}/_gateway")["lost"]
    text = env.guess(guess=5)
    assert _get(f"{gateway.url}/_gateway")["lost"] == lost + 1  # one request reached the env
    assert text.startswith("Error: the environment failed") and "502" in env.error, (text, env.error)
    assert (env.outcome, env.get_reward()) == ("env_error", None)


def test_a_reset_answered_502_after_create_leaves_no_session_open(both_module, gateway):
    env = both_module.BothEnv(base_url=gateway.url)
    before = _get(f"{gateway.url}/_gateway")
    text = env.reset(task_spec={"id": 1, "target": 1, "gateway": 502})
    assert text.startswith("Error: the environment failed") and env.outcome == "env_error", text
    after = _get(f"{gateway.url}/_gateway")
    assert after["lost"] == before["lost"] + 1  # `/create` was sent once
    assert after["open"] == before["open"] == 0  # the session it made was deleted
    assert env.reset(task_index=0).startswith("Task 0:"), env.error  # the next rollout plays
    assert env.submit(answer=TARGET) == "correct" and env.get_reward() == 1.0


# Item 12 (part): secrets reach the env on both servers, each the way it reads them.


@pytest.mark.parametrize("kind", ("openreward-sdk", "ors-sdk"))
def test_a_secret_reaches_the_env_on_both_servers(both_module, kind):
    with BothServer(kind) as server:
        env = both_module.BothEnv(base_url=server.url, secrets={"MY_TOKEN": "s3cr3t"})
        assert env.reset(task_index=0).startswith("Task 0:"), env.error
        assert env.keys() == "MY_TOKEN"


# Item 7: one SSE event is bounded by every byte and every line it takes.

PIECE = 64 * 1024


class _Flood:
    """`total` bytes of `line` in 64 KB pieces (as aiohttp's `content.readany` hands them), then
    the end; counts the bytes handed out. FAULT INJECTION: a hostile server's body, fed to our parser."""

    def __init__(self, line: bytes, total: int, prefix: bytes = b"") -> None:
        self.piece = line * (PIECE // len(line))
        self.prefix = prefix
        self.left = total
        self.consumed = 0

    async def readany(self) -> bytes:
        if self.consumed >= self.left:
            return b""
        piece, self.prefix = self.prefix + self.piece, b""
        self.consumed += len(piece)
        return piece


def _refused_after(flood: _Flood, max_event: int) -> int:
    """The bytes the parser read from `flood` before it refused the event."""
    import asyncio

    from orlgen.runtime.ors import sse

    async def drain() -> None:
        async for _ in sse.events(flood, hang=5.0, max_event=max_event):
            raise AssertionError("the flood is one event: nothing may be yielded")

    with pytest.raises(sse.EventTooLarge):
        asyncio.run(drain())
    return flood.consumed


@pytest.mark.parametrize("line", [b"data:\n", b"data:\r\n", b": comment\n", b"event: chunk\n", b"x\n"], ids=repr)
def test_an_event_of_empty_lines_is_refused_at_its_byte_bound(line):
    """Lines that add no `data` text (empty `data:` lines, comments, repeated fields) count too:
    refused after about the bound (one piece past it at most), not after the flood."""
    bound = 1024 * 1024
    consumed = _refused_after(_Flood(line, 8 * bound, prefix=b"event: end\n"), bound)
    assert consumed <= bound + PIECE


def test_an_event_of_many_short_lines_is_refused_at_its_line_bound():
    """16 MiB of `data:` lines would be 2.8 million lines: the line bound refuses far sooner, so
    the CPU a flood costs is bounded by lines, not only bytes."""
    from orlgen.runtime.ors import sse

    consumed = _refused_after(_Flood(b"data:\n", sse.MAX_EVENT, prefix=b"event: end\n"), sse.MAX_EVENT)
    assert consumed <= (sse.MAX_EVENT_LINES + 1) * len(b"data:\n") + PIECE
    assert consumed < sse.MAX_EVENT // 2


def test_a_large_event_in_many_data_lines_still_arrives_whole():
    """What the bound must not refuse: a 2 MB answer in 2 KB `data` lines, joined with newlines."""
    import asyncio

    from orlgen.runtime.ors import sse

    lines = [f"{i:04d}" * 512 for i in range(1000)]
    body = ("event: end\n" + "".join(f"data: {line}\n" for line in lines) + "\n").encode()

    class Once:
        def __init__(self) -> None:
            self.pieces = [body[i : i + PIECE] for i in range(0, len(body), PIECE)]

        async def readany(self) -> bytes:
            return self.pieces.pop(0) if self.pieces else b""

    async def read() -> list[tuple[str, str]]:
        return [event async for event in sse.events(Once(), hang=5.0)]

    assert asyncio.run(read()) == [("end", "\n".join(lines))]


@pytest.mark.slow
def test_a_flood_of_empty_data_lines_costs_bounded_memory(tmp_path):
    """A flood like the field's (there 44 million empty `data:` lines, 402 MB peak; here 4 million,
    24 MB) read by the parser in a child process with default bounds: refused before 16 MiB were
    read, its peak memory within 64 MB of the child's baseline."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import asyncio, json, resource
        from orlgen.runtime.ors import sse
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        piece = b"data:\\n" * (65536 // 6)
        consumed = 0
        class Flood:
            async def readany(self):
                global consumed
                if consumed >= 4_000_000 * 6:
                    return b""
                consumed += len(piece)
                return piece
        async def drain():
            async for _ in sse.events(Flood(), hang=5.0):
                pass
        try:
            asyncio.run(drain())
            refused = False
        except sse.EventTooLarge:
            refused = True
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"refused": refused, "consumed": consumed, "grew_kb": peak - base}))
        """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    found = json.loads(done.stdout)
    assert found["refused"] and found["consumed"] < 16 * 2**20, found
    assert found["grew_kb"] < 64 * 1024, found


# Item 8: an env slow to build is not a hung server; a setup that fails at once loses no shared tool.

SLOW = "tests.support.envs.wire4_slow:"


@pytest.mark.slow
def test_an_env_slower_to_build_than_the_hang_bound_captures_and_plays(tmp_path, monkeypatch):
    """The constructor takes 5 s, the hang bound is 2 s and the capture's request timeout 3 s:
    capture and a rollout of the generated module both wait for it (the SDK's server sends
    nothing while it builds the env, bounded by ORLGEN_STARTING_SECONDS instead)."""
    from orlgen.snapshot.model import load

    from tests.support.cli import invoke
    from tests.support.modules import load_module

    monkeypatch.setenv("ORLGEN_HANG_SECONDS", "2")
    monkeypatch.setenv("ORLGEN_REQUEST_TIMEOUT", "3")
    monkeypatch.setenv("ORLGEN_TEST_BUILD_SECONDS", "5")
    result = invoke("snapshot", SLOW + "SlowBuild", "--probes", "1", "--tasks", "all", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    snapshot = load(tmp_path / "slowbuild.snapshot.json")
    assert {tool.name for tool in snapshot.tools} == {"submit", "peek"}
    env = load_module(tmp_path / "slowbuild.py").SlowbuildEnv()
    assert env.reset(task_index=0).startswith("Puzzle 0:"), env.error
    assert env.submit(answer="s0") == "correct" and env.get_reward() == 1.0


def test_a_session_build_past_its_bound_names_the_variable(monkeypatch):
    """Past `ORLGEN_STARTING_SECONDS` a session's build is called hung, and the message says
    which variable changes the bound (the constructor takes 3 s, the bound is 1 s)."""
    from orlgen.runtime.session.connection import Connection

    monkeypatch.setenv("ORLGEN_STARTING_SECONDS", "1")
    monkeypatch.setenv("ORLGEN_TEST_BUILD_SECONDS", "3")
    from orlgen.serve import ServerProcess

    with ServerProcess(SLOW + "SlowBuild") as server:
        connection = Connection(server.url, None, "slowbuild", None, None)
        with pytest.raises(Exception) as caught:
            connection.run(lambda client: client.open_session("train", 0), 30)
    assert "no byte from the server for 1 s (ORLGEN_STARTING_SECONDS)" in str(caught.value)


def test_a_setup_that_fails_at_once_captures_every_shared_tool_with_one_line(tmp_path):
    from orlgen.serve import ServerProcess
    from orlgen.snapshot.model import load

    from tests.support.cli import invoke

    with ServerProcess(SLOW + "SetupFails") as server:
        result = invoke("snapshot", server.url, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    snapshot = load(tmp_path / "setupfails.snapshot.json")
    assert [tool.name for tool in snapshot.tools] == ["submit"]
    warning = result.stderr.splitlines()
    assert len(warning) == 1, result.stderr
    assert warning[0].startswith(
        f"orlgen: warning: {server.url}: setup failed on task train[0] (and 2 other probes): the server answered "
        "500: ConnectionError: cannot reach the sandbox service at 127.0.0.1:9"
    ), warning[0]
    assert "task-only tools could not be listed on those tasks" in warning[0]
