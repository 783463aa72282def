"""`python -m tests.support.servers.fast_clock module:Env PORT`: an ORS server whose clock runs 60
times fast, so its reaper (idle sessions die after 900 s) strikes after 15 real seconds, and
looks every 5/60 s instead of every 5 s (the server's one `asyncio.sleep` is the reaper's).
Fault injection for the keepalive test: only the server's idea of time changes."""

import asyncio
import sys
import time

import openreward.environments.server as server

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


server.time = _FastTime()
server.asyncio = _FastAsyncio()

if __name__ == "__main__":
    from orlgen.serve import main

    main(sys.argv[1:])
