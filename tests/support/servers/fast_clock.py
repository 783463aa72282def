"""`python -m tests.support.servers.fast_clock module:Env PORT`: an ORS server whose clock runs 60 times
fast, so its reaper (idle sessions die after 900 s) strikes after 15 real seconds. Fault
injection for the keepalive test: only the server's idea of time changes."""

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


server.time = _FastTime()

if __name__ == "__main__":
    from orlgen.serve import main

    main(sys.argv[1:])
