"""Rounds of concurrent rollouts on one runtime ORS client, and the server's count of the new TCP
connections they opened (`tests/support/wire_peers.py:CountPeers` on the server): what
`tests/test_connection_reuse.py` asserts and `bench/connections.py` reports."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from orlgen.runtime.ors import client as ors

from tests.support.wire_peers import ROUTE

MIDDLEWARE = ("tests.support.wire_peers:CountPeers",)
LATE_MIDDLEWARE = (*MIDDLEWARE, "tests.support.wire_peers:LateEnd")


def peers(url: str, reset: bool = False) -> dict:
    """The server's counts (`CountPeers`), or zero them (`reset`)."""
    request = urllib.request.Request(url + ROUTE + ("/reset" if reset else ""), method="POST" if reset else "GET")
    return json.loads(urllib.request.urlopen(request, timeout=30).read())


async def rollout(client: ors.Client, calls: int) -> None:
    """A session of the both-env, `calls` calls one after another (`guess` never ends the
    episode), its deletion."""
    session = await client.open_session(split="train", index=0)
    for guess in range(calls):
        await session.call_tool("guess", {"guess": guess % 101})
    await session.close()


async def one_round(client: ors.Client, url: str, sessions: int, calls: int) -> None:
    """`sessions` rollouts at once, then until every stream's body has ended (the server holds no
    late end, and one more round trip lets the client's loop read what it sent)."""
    await asyncio.gather(*(rollout(client, calls) for _ in range(sessions)))
    while (await asyncio.to_thread(peers, url))["late"]:
        await asyncio.sleep(0.05)
    await asyncio.to_thread(peers, url)


async def new_connections(url: str, sessions: int, calls: int, rounds: int) -> tuple[int, int]:
    """On a new client: the new connections of a first round (the pool grows from nothing), and
    of `rounds` more (the pool grown)."""
    client = ors.Client(url, None, "both", None, None)
    try:
        await asyncio.to_thread(peers, url, True)
        await one_round(client, url, sessions, calls)
        first = (await asyncio.to_thread(peers, url))["new_connections"]
        await asyncio.to_thread(peers, url, True)
        for _ in range(rounds):
            await one_round(client, url, sessions, calls)
        later = (await asyncio.to_thread(peers, url))["new_connections"]
    finally:
        await client.aclose()
    return first, later
