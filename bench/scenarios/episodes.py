"""Scenario 4: full episodes per second, one and eight concurrent rollouts."""

from __future__ import annotations

import threading
import time
from typing import Any

from bench.common import HELPDESK_MODULE, Paired, Served, log, pair_order
from bench.loading import load_module
from bench.scenarios.base import Row, helpdesk_specs
from bench.trl_side import factory


def _episode(env: Any, side: str, index: int, order_id: str) -> list[str]:
    outputs = [env.reset(task_index=index, split="train")]
    outputs.append(env.list_policies())
    outputs.append(env.search_orders(query=""))
    outputs.append(env.get_order(order_id=order_id))
    if side == "orlgen":
        env._episode.close()
    else:
        env._close()
    return outputs


def _episodes_run(
    side: str, factory: Any, threads: int, per_thread: int, specs: list[dict[str, Any]]
) -> tuple[float, int]:
    envs = [factory() for _ in range(threads)]
    errors: list[str] = []

    def work(t: int) -> None:
        for k in range(per_thread):
            index = (t * 37 + k) % len(specs)
            outputs = _episode(envs[t], side, index, specs[index]["order"]["order_id"])
            bad = [o for o in outputs if not o or o.startswith("Error")]
            if bad:
                errors.append(bad[0][:200])

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    seconds = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{side} episode failed: {errors[0]}")
    return seconds, threads * per_thread


def episodes(served: Served, reps: int, per_thread: dict[int, int]) -> tuple[list[Row], dict[str, Any]]:
    module = load_module(HELPDESK_MODULE, "bench_helpdesk_episodes")
    specs = helpdesk_specs()
    factories = {"orlgen": lambda: module.HelpdeskEnv(base_url=served.url), "trl": factory(served.url, 1)}
    _episodes_run("orlgen", factories["orlgen"], 1, 2, specs)  # warm-up, incl. orlgen's one drift check
    _episodes_run("trl", factories["trl"], 1, 2, specs)
    rows: list[Row] = []
    details: dict[str, Any] = {}
    for threads, count in per_thread.items():
        rate, per_episode = Paired(), Paired()
        for i in range(reps):
            log(f"4. episodes: {threads} thread(s), rep {i + 1}/{reps}")
            got = {}
            for side in pair_order(i):
                with served.counting() as counts:
                    seconds, done = _episodes_run(side, factories[side], threads, count, specs)
                got[side] = (done / seconds, counts["total"] / done, counts["by_path"])
            rate.add(got["orlgen"][0], got["trl"][0])
            per_episode.add(got["orlgen"][1], got["trl"][1])
            details[f"{threads}_by_path"] = {side: value[2] for side, value in got.items()}
        r, p = rate.summary(), per_episode.summary()
        details[f"{threads}_threads"] = {"episodes_per_s": r, "requests_per_episode": p}
        rows.append(
            Row(
                "4",
                "4 Full episode",
                f"reset + prompt, 3 tool calls, close; {threads} concurrent "
                f"rollout{'s' if threads > 1 else ''} ({threads}×{count} episodes per rep)",
                "episodes/s",
                "/s",
                r["orlgen_median"],
                r["trl_median"],
                "",
                None,
                f"HTTP requests per episode: orlgen {p['orlgen_median']:.1f}, TRL {p['trl_median']:.1f}",
                lower_is_better=False,
                samples=r,
            )
        )
    return rows, details
