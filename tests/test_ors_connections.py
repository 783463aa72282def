"""The runtime's ORS client keeps its TCP connections: a rollout's requests, streamed ones
included, go over one connection. A stream left at its `end` event, before the end of the HTTP
body, made aiohttp close its connection, and about half of all calls paid a new one on both sides
(`bench.wire`'s per-call overhead). Counted by the server: `tests/support/servers/peers.py`
records each request's client port."""

from __future__ import annotations

import asyncio
import json

import pytest
from orlgen.runtime.ors import client as ors
from orlgen.runtime.ors.errors import ToolRefused
from orlgen.serve import ServerProcess

pytestmark = pytest.mark.slow  # a server of its own

CALLS = 6


async def _rollout(url: str) -> None:
    """A session, `CALLS` calls one after another (past the episode's end they are refused, each
    still a whole stream), and its deletion."""
    client = ors.Client(url, None, "echo", None, None)
    try:
        session = await client.open_session(split="train", index=0)
        for _ in range(CALLS):
            try:
                await session.call_tool("echo", {"text": "hello"})
            except ToolRefused:
                pass
        await session.close()
    finally:
        await client.aclose()


def test_a_rollouts_requests_share_one_connection(tmp_path, monkeypatch):
    log = tmp_path / "peers.jsonl"
    monkeypatch.setenv("ORLGEN_PEER_LOG", str(log))
    with ServerProcess("examples.echo:Echo", entry="tests.support.servers.peers") as server:
        log.write_text("")  # the start-up probes are not the rollout's
        asyncio.run(_rollout(server.url))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    paths = [record["path"] for record in records]
    assert paths == ["/create_session", "/create", *["/echo/call"] * CALLS, "/delete", "/delete_session"]
    assert len({record["port"] for record in records}) == 1, records


async def _closed_before_delete_session(url: str, log, release) -> bool:
    """Whether `session.close()` had returned when `/delete_session` reached the server (which
    holds its answer until `release` exists), and the request still arrived before `aclose` ended."""
    client = ors.Client(url, None, "echo", None, None)
    try:
        session = await client.open_session(split="train", index=0)
        closing = asyncio.get_running_loop().create_task(session.close())
        while "/delete_session" not in log.read_text():
            await asyncio.sleep(0.01)
        returned = closing.done()
        release.touch()
        await closing
    finally:
        await client.aclose()
    return returned


def test_a_closed_session_does_not_wait_for_delete_session(tmp_path, monkeypatch):
    """A finished episode's session is deleted inside the adapter's last call: that call waits for
    `/delete` (the env lets the session go), not for `/delete_session` too, which `aclose` waits for."""
    log = tmp_path / "peers.jsonl"
    monkeypatch.setenv("ORLGEN_PEER_LOG", str(log))
    monkeypatch.setenv("ORLGEN_PEER_HOLD", "/delete_session")
    with ServerProcess("examples.echo:Echo", entry="tests.support.servers.peers") as server:
        log.write_text("")
        assert asyncio.run(_closed_before_delete_session(server.url, log, tmp_path / "peers.jsonl.release"))
    paths = [json.loads(line)["path"] for line in log.read_text().splitlines()]
    assert paths[-2:] == ["/delete", "/delete_session"]
