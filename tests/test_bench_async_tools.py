"""`python -m bench.async_tools`' prototype (async tool methods awaited from the worker's event
loop) and the shipped sync order, on the slow env served by a real ORS server with short delays:
the prototype reaches into the adapter's runtime, so a runtime change must not break it unseen."""

from __future__ import annotations

import asyncio

from bench.async_tools import _async_rollouts
from bench.slow import concurrent, generated_module, slow_server


def test_the_async_prototype_and_the_shipped_order_score_every_rollout(tmp_path):
    with slow_server(0.01, 0.0) as url:
        module = generated_module(tmp_path)
        # Each raises unless every rollout ends with reward 1.0.
        assert asyncio.run(_async_rollouts([module.SlowEnv(base_url=url) for _ in range(2)])) > 0
        assert concurrent([module.SlowEnv(base_url=url) for _ in range(2)]) > 0
