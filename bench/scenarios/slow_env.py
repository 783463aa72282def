"""Scenario 8: the slow environment (`bench.slow`), batches of 8, 32 and 64 rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import log, median
from bench.scenarios.base import Row
from bench.slow import (
    CONCURRENT_REPS,
    GENERATIONS,
    TURNS,
    concurrent,
    delays,
    floor_s,
    generated_module,
    serial,
    slow_server,
)
from bench.trl_side import factory, trl_addressing

SCENARIO = "8 Slow env"


def slow_env(out: Path, quick: bool) -> tuple[list[Any], dict[str, Any]]:
    setup_s, tool_s = delays(quick)
    floor = floor_s(setup_s, tool_s)
    rows: list[Any] = []
    details: dict[str, Any] = {"setup_s": setup_s, "tool_s": tool_s, "floor_s": floor, "batches": {}}
    with slow_server(setup_s, tool_s) as url:
        log(f"8. slow env: setup {setup_s:g} s, tool {tool_s:g} s; capturing")
        module = generated_module(out)
        with trl_addressing(url):
            trl_factory = factory(url, 8)
            for batch in (8, 32, 64):
                log(f"8. slow env: batch {batch}")
                got = _batch(batch, url, module, trl_factory)
                details["batches"][batch] = got
                case = f"{batch} rollouts × {TURNS} tool turns; setup {setup_s:g} s, tool {tool_s:g} s"
                # The goal is set for 1 s setups: --quick's 0.16 s floor is mostly per-request CPU.
                rows += _rows(case, got, floor, judged=batch == 64 and not quick)
    return rows, details


def _batch(batch: int, url: str, module: Any, trl_factory: Any) -> dict[str, float]:
    """Env-time of one batch: TRL serial, orlgen serial, concurrent, serial with prefetch."""
    return {
        "trl_serial": serial([trl_factory() for _ in range(batch)], lambda env: env._close()),
        "orlgen_serial": serial([module.SlowEnv(base_url=url) for _ in range(batch)], lambda env: env.get_reward()),
        # Cheap (a few seconds) and the most sensitive to a busy CPU: the median of 3.
        "orlgen_concurrent": median(
            [concurrent([module.SlowEnv(base_url=url) for _ in range(batch)]) for _ in range(CONCURRENT_REPS)]
        ),
        "orlgen_prefetch_serial": serial(
            [module.SlowEnv(base_url=url, prefetch=GENERATIONS) for _ in range(batch)],
            lambda env: env.get_reward(),
        ),
    }


def _rows(case: str, got: dict[str, float], floor: float, judged: bool) -> list[Row]:
    return [
        Row(
            "8",
            SCENARIO,
            f"{case}: serial order (GRPOTrainer)",
            "env-time per batch",
            "s",
            got["orlgen_serial"],
            got["trl_serial"],
            "",
            None,
            f"floor {floor:.2f} s; orlgen/floor {got['orlgen_serial'] / floor:.1f}×",
            samples=got,
        ),
        Row(
            "8",
            SCENARIO,
            f"{case}: concurrent order (AsyncGRPOTrainer) vs TRL serial",
            "env-time per batch",
            "s",
            got["orlgen_concurrent"],
            got["trl_serial"],
            "≤ 1.5× floor at 64" if judged else "",
            got["orlgen_concurrent"] <= 1.5 * floor if judged else None,
            f"floor {floor:.2f} s; orlgen/floor {got['orlgen_concurrent'] / floor:.2f}×",
        ),
        Row(
            "8",
            SCENARIO,
            f"{case}: serial order, prefetch={GENERATIONS}",
            "env-time per batch",
            "s",
            got["orlgen_prefetch_serial"],
            got["orlgen_serial"],
            "",
            None,
            f"ratio is against orlgen serial without prefetch; floor {floor:.2f} s",
        ),
    ]
