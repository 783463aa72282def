"""Environment-owned data: rows that name no task (TRL's placeholder rows under
`train_dataset=None`, a mixture's routing-only rows) and rows with an ad-hoc `task_spec`, against
real echo servers on loopback: the rollouts on both ORS implementations (`serve`), the training
steps on the SDK's server."""

from __future__ import annotations

import pytest
from orlgen.runtime.session import draw

from tests.support.training import Recorder, grpo_trainer

TARGETS = ["hello", "orlgen", "open reward", "grpo", "snapshot", "typed tools", "review me", "done"]


def target_of(prompt: str) -> str:
    return prompt.split("text ", 1)[1].rstrip(".").strip("'\"")


@pytest.fixture
def served_echo(serve) -> str:
    return serve("examples.echo:Echo")


def played(env, rows) -> list[str]:
    targets = []
    for row in rows:
        targets.append(target_of(env.reset(**row)))
        assert env.outcome == "running", env.error
    return targets


def test_rows_without_a_task_draw_every_task_once_per_pass_reproducibly(echo_module, served_echo, monkeypatch):
    monkeypatch.setattr(draw, "_walks", {})
    env = echo_module.EchoEnv(base_url=served_echo)
    placeholder = {"prompt": [{"role": "user", "content": ""}]}  # what TRL builds for train_dataset=None
    first = played(env, [placeholder] * 8)
    assert sorted(first) == sorted(TARGETS)  # spread over the split: each task once in a pass
    assert first[:3] != TARGETS[:3]  # a permutation, not task 0, 1, 2
    second = played(env, [placeholder] * 8)
    assert sorted(second) == sorted(TARGETS) and second != first  # the next pass is a new order

    monkeypatch.setattr(draw, "_walks", {})  # a new process
    assert played(echo_module.EchoEnv(base_url=served_echo), [{}] * 8) == first  # seeded: reproducible
    monkeypatch.setattr(draw, "_walks", {})
    assert played(echo_module.EchoEnv(base_url=served_echo, seed=1), [{}] * 8) != first


def test_a_group_plays_one_task_and_ranks_play_different_ones(echo_module, served_echo, monkeypatch):
    monkeypatch.setattr(draw, "_walks", {})
    envs = [echo_module.EchoEnv(base_url=served_echo, num_generations=2) for _ in range(4)]
    targets = [target_of(env.reset()) for env in envs]  # GRPO resets a batch's rollouts in order
    assert targets[0] == targets[1] and targets[2] == targets[3] and targets[0] != targets[2]

    by_rank = {}
    for rank in (0, 1):
        monkeypatch.setattr(draw, "_walks", {})
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        by_rank[rank] = played(echo_module.EchoEnv(base_url=served_echo), [{}] * 4)
    assert sorted(by_rank[0] + by_rank[1]) == sorted(TARGETS)


def test_task_spec_opens_an_ad_hoc_task(echo_module, served_echo):
    env = echo_module.EchoEnv(base_url=served_echo)
    assert (
        env.reset(task_spec={"target": "made up", "offers_hint": False})
        == "Call the echo tool with the text 'made up'."
    )
    assert env.echo(text="made up") == "correct" and env.reward == 1.0
    assert target_of(env.reset(task_spec='{"target": "as json", "offers_hint": true}')) == "as json"
    with pytest.raises(ValueError, match="task_spec must be a JSON object"):
        env.reset(task_spec=[1, 2])


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_grpo_trainer_trains_with_train_dataset_none(echo_module, echo_url, tmp_path, monkeypatch):
    """TRL 1.16's environment-owned mode: no dataset, `max_steps`, placeholder rows; every rollout's
    `reset` draws a task (old adapters raised KeyError: 'task_index' on the first batch)."""
    import functools

    monkeypatch.setattr(draw, "_walks", {})
    factory = Recorder(functools.partial(echo_module.EchoEnv, num_generations=2, base_url=echo_url))
    trainer = grpo_trainer(tmp_path, environment_factory=factory, train_dataset=None)
    trainer.train()

    assert trainer.state.global_step == 1
    assert all(env.error is None for env in factory.created), [env.error for env in factory.created]
    (walk,) = draw._walks.values()
    assert walk.draws == 4  # 2 groups of 2 generations, each reset drew
    assert all(not env._episode.open for env in factory.created)  # get_reward ended every session


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_mixture_trains_on_routing_only_rows(tmp_path, echo_url, helpdesk_url, monkeypatch):
    """Rows that carry only an `environment` column: each adapter draws its own task."""
    import functools

    from datasets import Dataset

    from generated import support_mix

    monkeypatch.setattr(draw, "_walks", {})
    factories = {
        "echo": Recorder(functools.partial(support_mix.environments["echo"], base_url=echo_url)),
        "helpdesk": Recorder(functools.partial(support_mix.environments["helpdesk"], base_url=helpdesk_url)),
    }
    trainer = grpo_trainer(
        tmp_path,
        environment_factory=factories,
        train_dataset=Dataset.from_dict({"environment": ["echo", "helpdesk"]}),
        reward_funcs=support_mix.reward_funcs,
        max_completion_length=16,
    )
    trainer.train()
    assert trainer.state.global_step == 1
    rollouts = [env for recorder in factories.values() for env in recorder.created]
    assert all(env.error is None for env in rollouts), [env.error for env in rollouts]
    assert sorted(walk.draws for walk in draw._walks.values()) == [2, 2]  # each env drew its own tasks
