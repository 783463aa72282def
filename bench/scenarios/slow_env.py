"""Scenario 8: the slow environment (`bench.slow`), batches of 8, 32 and 64 rollouts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.slow import CONCURRENT_REPS, GENERATIONS, TURNS, concurrent, generated_module, serial, slow_server


def slow_env(out: Path, quick: bool) -> tuple[list[Any], dict[str, Any]]:
    from bench.common import median, trl_addressing
    from bench.scenarios.base import Row, _quiet_trl, log

    setup_s, tool_s = (0.1, 0.02) if quick else (1.0, 0.2)
    floor = setup_s + TURNS * tool_s
    rows: list[Any] = []
    details: dict[str, Any] = {"setup_s": setup_s, "tool_s": tool_s, "floor_s": floor, "batches": {}}
    with slow_server(setup_s, tool_s) as url:
        log(f"8. slow env: setup {setup_s:g} s, tool {tool_s:g} s; capturing")
        module = generated_module(out)
        with trl_addressing(url):
            spec = _quiet_trl()(url, num_tasks=8)
            trl_factory = spec.environment_factory
            trl_factory()  # tool discovery, once, as in a trainer
            for batch in (8, 32, 64):
                log(f"8. slow env: batch {batch}")
                got = {
                    "trl_serial": serial([trl_factory() for _ in range(batch)], lambda env: env._close()),
                    "orlgen_serial": serial(
                        [module.SlowEnv(base_url=url) for _ in range(batch)], lambda env: env.get_reward()
                    ),
                    # Cheap (a few seconds) and the most sensitive to a busy CPU: the median of 3.
                    "orlgen_concurrent": median(
                        [
                            concurrent([module.SlowEnv(base_url=url) for _ in range(batch)])
                            for _ in range(CONCURRENT_REPS)
                        ]
                    ),
                    "orlgen_prefetch_serial": serial(
                        [module.SlowEnv(base_url=url, prefetch=GENERATIONS) for _ in range(batch)],
                        lambda env: env.get_reward(),
                    ),
                }
                details["batches"][batch] = got
                case = f"{batch} rollouts × {TURNS} tool turns; setup {setup_s:g} s, tool {tool_s:g} s"
                rows.append(
                    Row(
                        "8",
                        "8 Slow env",
                        f"{case}: serial order (GRPOTrainer)",
                        "env-time per batch",
                        "s",
                        got["orlgen_serial"],
                        got["trl_serial"],
                        "",
                        None,
                        f"floor {floor:.2f} s; orlgen/floor {got['orlgen_serial'] / floor:.1f}×",
                        samples=got,
                    )
                )
                # The goal is set for 1 s setups: --quick's 0.16 s floor is mostly per-request CPU.
                judged = batch == 64 and not quick
                met = got["orlgen_concurrent"] <= 1.5 * floor if judged else None
                rows.append(
                    Row(
                        "8",
                        "8 Slow env",
                        f"{case}: concurrent order (AsyncGRPOTrainer) vs TRL serial",
                        "env-time per batch",
                        "s",
                        got["orlgen_concurrent"],
                        got["trl_serial"],
                        "≤ 1.5× floor at 64" if judged else "",
                        met,
                        f"floor {floor:.2f} s; orlgen/floor {got['orlgen_concurrent'] / floor:.2f}×",
                    )
                )
                rows.append(
                    Row(
                        "8",
                        "8 Slow env",
                        f"{case}: serial order, prefetch={GENERATIONS}",
                        "env-time per batch",
                        "s",
                        got["orlgen_prefetch_serial"],
                        got["orlgen_serial"],
                        "",
                        None,
                        f"ratio is against orlgen serial without prefetch; floor {floor:.2f} s",
                    )
                )
    return rows, details
