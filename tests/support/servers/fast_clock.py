"""`python -m tests.support.servers.fast_clock module:Env PORT`: an ORS server whose clock runs 60
times fast, so its reaper (idle sessions die after 900 s) strikes after 15 real seconds, and
looks every 5/60 s instead of every 5 s (the server's one `asyncio.sleep` is the reaper's).
Fault injection for the keepalive test: only the server's idea of time changes. The openreward
SDK's server, or ors-sdk's for an `ors:module:Env` spec (`tests/support/servers/both.py`); both
reap the same way (900 s without a ping, looked for every 5 s)."""

import asyncio
import sys
import time

SPEED = 60.0
_start = time.monotonic()


class _FastTime:
    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def monotonic() -> float:
        return _start + (time.monotonic() - _start) * SPEED


class _FastAsyncio:
    def __getattr__(self, name):
        return getattr(asyncio, name)

    @staticmethod
    async def sleep(delay: float, result=None):
        return await asyncio.sleep(delay / SPEED, result)


def speed_up(server) -> None:
    """The server module's clock and its sleeps, 60 times fast."""
    server.time = _FastTime()
    server.asyncio = _FastAsyncio()


if __name__ == "__main__":
    from tests.support.servers import both

    if sys.argv[1].startswith(both.PORTED):
        import ors.server

        speed_up(ors.server)
        both.serve(both.app_for(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    else:
        import openreward.environments.server
        from orlgen.serve import main

        speed_up(openreward.environments.server)
        main(sys.argv[1:])
