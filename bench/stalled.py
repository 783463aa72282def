"""`bench.served`'s environments as `orlgen.serve` serves them today: without TCP_NODELAY, so a
response written in two pieces waits for the client's delayed ACK (see `bench.served`)."""

import asyncio.base_events

from bench.served import ORIGINAL_SET_NODELAY, Helpdesk

asyncio.base_events._set_nodelay = ORIGINAL_SET_NODELAY

__all__ = ["Helpdesk"]
