"""The runtime's ORS client reuses its TCP connections at any concurrency: many sessions at once,
each doing several calls, open new connections only while the pool grows to the peak of requests
in flight, never one per call.

A call's stream is read past its `end` event to the end of its HTTP body, and aiohttp puts a
connection back in its pool only once the body has ended. Under load (a busy server, or a client
loop with hundreds of sessions) the body's end arrives late, and the client used to give up
waiting after `END_WAIT` and close the connection: every late stream cost a new TCP connection.
The fault is injected (`tests/support/wire_peers.py:LateEnd`: each stream's body ends `LATE`
seconds after its last event, past the wait the test sets), the connections are counted by the
server (`CountPeers`, each request's client address) on both ORS implementations. Counts, never
times."""

from __future__ import annotations

import asyncio

import pytest
from orlgen.runtime.ors import client as ors
from orlgen.runtime.ors import session as sessions

from tests.support.servers.both import BothServer
from tests.support.wire_peers import LATE_VAR
from tests.support.wire_rounds import LATE_MIDDLEWARE, new_connections

pytestmark = pytest.mark.slow  # a server of its own, three rounds of 64 sessions

SESSIONS = 64
CALLS = 6
MEASURED_ROUNDS = 2
BOUND = 0.05  # new connections per call once the pool has grown
END_WAIT = 0.2  # the wait past `end` (shortened from ors.END_WAIT, for a short test)
LATE = 0.3  # seconds a stream's body ends after its last event: past the wait, by less than a call takes


def test_late_stream_ends_do_not_cost_connections(ors_kind, monkeypatch):
    monkeypatch.setattr(ors, "END_WAIT", END_WAIT)
    monkeypatch.setattr(sessions, "PING_EVERY", 3600.0)  # a burst of 64 pings grows the pool: not this test's subject
    monkeypatch.setenv(LATE_VAR, str(LATE))
    with BothServer(ors_kind, middleware=LATE_MIDDLEWARE) as server:
        first, later = asyncio.run(new_connections(server.url, SESSIONS, CALLS, MEASURED_ROUNDS))
    per_call = later / (SESSIONS * CALLS * MEASURED_ROUNDS)
    assert per_call <= BOUND, f"{later} new connections in {MEASURED_ROUNDS} rounds after the first ({first})"
