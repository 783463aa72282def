"""New TCP connections per call of the runtime's ORS client at 1 / 64 / 256 concurrent sessions
(issue 39): connections are reused at any concurrency, new ones opened only while the pool grows.

    python -m bench.connections [--label before|after] [--kinds openreward-sdk,ors-sdk]

One client (as a process keeps one per connection) runs rounds of rollouts on the both-env
(`tests/support/envs/both.py`), every session at once, each `CALLS` calls; the server counts the
new connections (`tests/support/wire_peers.py:CountPeers`, each request's client address). Per
session count: new connections per call in the first round (the pool grows from nothing: at least
one per session) and in the `ROUNDS` after it (the pool grown: 0 when every connection is
reused). Two conditions: loopback as it is, and each stream's body ending `LATE` s after its last
event (`LateEnd`), past the `END_WAIT` s the caller waits for it, as under load. Counts, not times.
Results under `--label` in bench/connections-results.json; the table shows both labels.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from bench.common import REPO, child_environ, log, write_json

RESULTS = REPO / "bench" / "connections-results.json"
SESSIONS = (1, 64, 256)
CALLS = 8
ROUNDS = 2
END_WAIT = 0.2
LATE = 0.3
KINDS = ("openreward-sdk", "ors-sdk")


def measure(kind: str, late: bool) -> dict[str, Any]:
    """New connections per call, first round and later rounds, at each session count."""
    from orlgen.runtime.ors import client as ors
    from orlgen.runtime.ors import session as ors_session

    from tests.support.servers.both import BothServer
    from tests.support.wire_peers import LATE_VAR
    from tests.support.wire_rounds import LATE_MIDDLEWARE, MIDDLEWARE, new_connections

    saved = ors_session.PING_EVERY, ors.END_WAIT
    ors_session.PING_EVERY = 3600.0  # a burst of pings is a burst of requests: not what is counted here
    ors.END_WAIT = END_WAIT if late else ors.END_WAIT
    found: dict[str, Any] = {}
    try:
        with (
            child_environ(**{LATE_VAR: str(LATE)}),
            BothServer(kind, middleware=LATE_MIDDLEWARE if late else MIDDLEWARE) as server,
        ):
            for sessions in SESSIONS:
                first, later = asyncio.run(new_connections(server.url, sessions, CALLS, ROUNDS))
                found[str(sessions)] = {
                    "first_round": first / (sessions * CALLS),
                    "later_rounds": later / (sessions * CALLS * ROUNDS),
                    "new_connections": [first, later],
                }
                log(f"{kind} {'late end' if late else 'loopback'} x{sessions}: {found[str(sessions)]}")
    finally:
        ors_session.PING_EVERY, ors.END_WAIT = saved
    return found


def text_table(runs: dict[str, Any]) -> str:
    lines = [f"{'new connections per call':58} {'before':>9} {'after':>9}"]
    for kind in KINDS:
        for condition in ("loopback", "late_end"):
            for sessions in SESSIONS:
                for part in ("first_round", "later_rounds"):
                    name = f"{kind} {condition} x{sessions} {part.replace('_', ' ')}"
                    cells = [runs.get(label, {}).get(kind, {}).get(condition, {}).get(str(sessions), {}).get(part)
                             for label in ("before", "after")]  # fmt: skip
                    lines.append(
                        f"{name:58} " + " ".join(f"{c:>9.3f}" if c is not None else f"{'-':>9}" for c in cells)
                    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.connections", description=__doc__.splitlines()[0])
    parser.add_argument("--label", choices=("before", "after"), default="after")
    parser.add_argument("--kinds", default=",".join(KINDS), help="ORS servers, comma-separated")
    args = parser.parse_args(argv)
    os.chdir(REPO)  # the servers import the both-env from the repository
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for kind in args.kinds.split(","):
        runs.setdefault(args.label, {})[kind] = {"loopback": measure(kind, False), "late_end": measure(kind, True)}
        write_json(RESULTS, runs)
    print(text_table(runs))


if __name__ == "__main__":
    main()
