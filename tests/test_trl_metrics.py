"""orlgen's metrics reach TRL through the public hooks TRL 1.16 hands reward functions.

A real `GRPOTrainer` step of the tiny Qwen3 (taught the echo call, as in test_trl.py) on two echo
tasks against a real ORS server. orlgen's reward functions call `log_metric` and `log_extra`;
nothing of orlgen's writes a private attribute of the trainer. Two probe reward functions of the
test's own (they score nothing) bracket orlgen's in `reward_funcs` and read the trainer around it:
TRL runs `reward_funcs` in order, so whatever changed between the probes is orlgen's doing. The
probes read two private attributes of trl 1.16 to tell the doors apart: `_pending_metrics`, which
only TRL's `log_metric` hook fills, and `_metrics`, which scoring_callback used to write.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections import defaultdict
from types import SimpleNamespace

import pandas as pd
import pytest

from examples.echo import TARGETS
from tests.support.training import make_trainer
from tests.test_trl import teach_echo_hello

COVERAGE_NAMES = ["rollouts", "scored_fraction", "env_errors", "unfinished", "tool_errors", "tool_calls_mean"]


class Probes:
    """`before` and `after`, reward functions that record the trainer's attributes around
    what runs between them; each returns None for every rollout."""

    def __init__(self) -> None:
        self.trainer = None
        self.seen: dict[str, object] = {}

    def before(self, completions, **_):
        trainer = self.trainer
        self.seen["ids"] = {name: id(value) for name, value in vars(trainer).items()}
        self.seen["metrics"] = copy.deepcopy(dict(trainer._metrics["train"]))
        self.seen["pending"] = copy.deepcopy(dict(trainer._pending_metrics))
        return [None] * len(completions)

    def after(self, completions, **_):
        trainer = self.trainer
        self.seen["ids_after"] = {name: id(value) for name, value in vars(trainer).items()}
        self.seen["metrics_after"] = copy.deepcopy(dict(trainer._metrics["train"]))
        self.seen["pending_after"] = copy.deepcopy(dict(trainer._pending_metrics))
        self.seen["extra_after"] = copy.deepcopy(dict(trainer._pending_extra_logs))
        return [None] * len(completions)


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
@pytest.mark.parametrize("scorers", ["get_reward", "reward_funcs"])
def test_metrics_reach_trl_through_log_metric_and_log_extra(scorers, echo_module, echo_url, tiny_model_path, tmp_path):
    """`get_reward`: the module's `reward_funcs` (empty: `EchoEnv.get_reward()` scores) plus
    `scoring_metrics`, whose column is empty. `reward_funcs`: orlgen's two scorers, the first
    owning each rollout; both log, and the batch is logged once (a column logged twice would
    not fit the table)."""
    from orlgen.runtime import scoring_metrics
    from orlgen.runtime.session.metrics import COUNTERS

    probes = Probes()
    before, after = probes.before, probes.after
    ours = (
        [*echo_module.reward_funcs, scoring_metrics]
        if scorers == "get_reward"
        else [echo_module.outcome_reward, echo_module.summed_reward]
    )
    rows = echo_module.build_dataset(indices=[0, 1])
    trainer, factory = make_trainer(
        tiny_model_path,
        echo_module,
        echo_url,
        rows,
        tmp_path,
        reward_funcs=[before, *ours, after],
        temperature=0.5,
        log_completions=True,
    )
    probes.trainer = trainer
    loss = teach_echo_hello(trainer, echo_module, echo_url, list(rows))
    assert loss < 0.05, f"the tiny model did not learn the tool call (loss {loss:.3f})"
    COUNTERS.take()  # the sessions teaching opened
    trainer.train()
    assert all(env.outcome == "finished" for env in factory.created)  # every rollout made the call

    # Between the probes: no attribute of the trainer rebound or added, `_metrics` untouched; orlgen's
    # numbers wait in the buffer only `log_metric` fills, one value each (one batch, logged once).
    seen = probes.seen
    assert seen["ids_after"] == seen["ids"]
    assert seen["metrics_after"] == seen["metrics"] and not any(name.startswith("orlgen/") for name in seen["metrics"])
    assert not any(name.startswith("orlgen/") for name in seen["pending"])
    pending = {name: values for name, values in seen["pending_after"].items() if name.startswith("orlgen/")}
    assert {f"orlgen/{name}" for name in COVERAGE_NAMES} <= set(pending)
    assert all(len(values) == 1 for values in pending.values()), pending
    assert seen["extra_after"]["orlgen/outcome"] == ["finished"] * 4

    # In the step's log: the batch's coverage (4 rollouts, each scored, one call each) and the runtime's counters.
    metrics = trainer.state.log_history[0]
    assert metrics["reward"] == pytest.approx(0.5)  # the server's verdicts, counted once
    assert [metrics[f"orlgen/{name}"] for name in COVERAGE_NAMES] == [4.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    assert metrics["orlgen/sessions_opened"] == 4.0 and metrics["orlgen/breaker_rejections"] == 0.0
    assert metrics["orlgen/tool_latency_ms/echo"] > 0.0
    if scorers == "get_reward":
        assert metrics["rewards/EchoEnv/mean"] == pytest.approx(0.5)
        assert metrics["rewards/scoring_metrics/mean"] is None  # TRL's column for it: empty
    else:
        assert metrics["rewards/outcome_reward/mean"] == pytest.approx(0.5)
        assert metrics["rewards/summed_reward/mean"] is None and metrics["rewards/EchoEnv/mean"] is None

    # And each rollout's columns in the completions table TRL writes (and shows in wandb/trackio).
    (table,) = (tmp_path / "completions").glob("*.parquet")
    completions = pd.read_parquet(table)
    assert list(completions["orlgen/outcome"]) == ["finished"] * 4
    assert list(completions["orlgen/tool_calls"]) == [1] * 4 and list(completions["orlgen/tool_errors"]) == [0] * 4
    assert completions["orlgen/error"].isna().all()


class Hooks:
    """What TRL hands reward functions, kept: `log_metric` and `log_extra` as TRL 1.16 calls them."""

    def __init__(self) -> None:
        self.metrics: defaultdict[str, list[float]] = defaultdict(list)
        self.extra: defaultdict[str, list] = defaultdict(list)

    def kwargs(self) -> dict:
        return {"log_metric": lambda name, value: self.metrics[name].append(value),
                "log_extra": lambda column, values: self.extra[column].extend(values)}  # fmt: skip


def test_a_batch_is_logged_once_by_whichever_of_orlgens_functions_sees_it(echo_module, echo_url):
    """Three rollouts (won, lost, never played) scored by two of orlgen's functions: one set of
    numbers, one column each; the next batch (a new list, as TRL builds one) is logged again;
    a caller without the hooks (orlgen's rollout loop) logs nothing and still scores."""
    from orlgen.runtime import outcome_reward, scoring_metrics, summed_reward
    from orlgen.runtime.session.metrics import COUNTERS

    COUNTERS.take()  # what earlier tests counted in this process
    envs = [echo_module.EchoEnv(base_url=echo_url) for _ in range(3)]
    for index, env in enumerate(envs[:2]):
        env.reset(split="train", task_index=index)
        env.echo(text=TARGETS[0])  # task 0 won, task 1 lost
    hooks = Hooks()
    assert outcome_reward(environments=envs, completions=[[]] * 3, **hooks.kwargs()) == [1.0, 0.0, None]
    assert summed_reward(environments=envs, completions=[[]] * 3, **hooks.kwargs()) == [None] * 3
    assert scoring_metrics(environments=envs, completions=[[]] * 3, **hooks.kwargs()) == [None] * 3
    logged = {name: values for name, values in hooks.metrics.items() if not name.startswith("orlgen/tool_latency_ms/")}
    assert logged == {
        "orlgen/rollouts": [3.0], "orlgen/scored_fraction": [2 / 3], "orlgen/env_errors": [0.0],
        "orlgen/unfinished": [1.0], "orlgen/tool_errors": [0.0], "orlgen/tool_calls_mean": [2 / 3],
        "orlgen/sessions_opened": [2.0], "orlgen/capacity_waits": [0.0], "orlgen/capacity_wait_s": [0.0],
        "orlgen/breaker_rejections": [0.0], "orlgen/images_refused": [0.0],
    }  # fmt: skip
    assert dict(hooks.extra) == {
        "orlgen/outcome": ["finished", "finished", "running"], "orlgen/error": [None] * 3,
        "orlgen/tool_calls": [1, 1, 0], "orlgen/tool_errors": [0, 0, 0],
    }  # fmt: skip

    scoring_metrics(environments=list(envs), completions=[[]] * 3, **hooks.kwargs())  # the next batch
    assert hooks.metrics["orlgen/rollouts"] == [3.0, 3.0] and len(hooks.extra["orlgen/outcome"]) == 6

    again = echo_module.EchoEnv(base_url=echo_url)
    again.reset(split="train", task_index=0)
    again.echo(text=TARGETS[0])
    assert outcome_reward(environments=[again], completions=[[]]) == [1.0]  # no hooks: scored, nothing logged
    assert hooks.metrics["orlgen/rollouts"] == [3.0, 3.0]


def test_scoring_callback_writes_nothing_and_warns_when_no_function_of_orlgens_logs(caplog):
    """Deprecated: it warns (once, at train begin) only where no reward function of orlgen's
    (a partial of one counts) would log, and leaves the trainer as it found it."""
    from orlgen.runtime import outcome_reward_with, scoring_callback, scoring_metrics

    def own_reward(completions, **_):
        return [0.0] * len(completions)

    for funcs, warns in [
        ([own_reward], True),
        ([own_reward, scoring_metrics], False),
        ([functools.partial(outcome_reward_with(env_error=0.0))], False),
    ]:
        trainer = SimpleNamespace(reward_funcs=funcs)
        before = dict(vars(trainer))
        with pytest.deprecated_call():
            callback = scoring_callback(trainer)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="orlgen"):
            callback.on_train_begin(None, None, None)
        assert ("add orlgen.runtime.scoring_metrics" in caplog.text) is warns, funcs
        assert vars(trainer) == before
