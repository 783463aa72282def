"""Opt-in prefetch for GRPOTrainer's serial resets: a group's sessions are opened together, and
those a cut group leaves are deleted. Real counting server (it records sessions opened/closed),
on both ORS implementations (`ors_kind`); task 9's setup takes 4 s."""

from __future__ import annotations

import json
import time

import pytest
from orlgen.runtime.session import prefetch
from orlgen.runtime.session.admission import close_sessions

from tests.support.modules import generated
from tests.support.servers.both import server_process
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # a fresh server per test and setups that take seconds


@pytest.fixture(scope="module")
def counting(tmp_path_factory):
    return generated("tests.support.envs.counting:Counting", tmp_path_factory.mktemp("counting"))


@pytest.fixture
def server(tmp_path, monkeypatch, ors_kind):
    count_file = tmp_path / "counts.json"
    monkeypatch.setenv("ORLGEN_COUNT_FILE", str(count_file))
    with server_process(ors_kind, "tests.support.envs.counting:Counting") as process:
        process.counts = lambda: json.loads(count_file.read_text())
        yield process


def test_serial_group_resets_wait_for_one_setup_not_four(counting, server):
    envs = [counting.CountingEnv(base_url=server.url, prefetch=4) for _ in range(4)]
    started = time.perf_counter()
    prompts = [env.reset(task_index=9) for env in envs]  # GRPOTrainer's order: one after another
    seconds = time.perf_counter() - started
    assert prompts == ["counting task 9"] * 4
    assert seconds < 8.0, seconds  # one 4 s setup (serially: 16 s)
    assert server.counts()["opened"] == 4
    assert [env.finish() for env in envs] == ["finished"] * 4  # four distinct live sessions
    assert [env.get_reward() for env in envs] == [1.0] * 4


def test_a_cut_group_costs_its_unused_sessions_and_they_are_deleted(counting, server):
    env = counting.CountingEnv(base_url=server.url, prefetch=3)
    env.reset(task_index=0)  # opens 3: one used, 2 kept for task 0
    env.reset(task_index=0)  # takes a kept one
    assert server.counts()["opened"] == 3
    env.reset(task_index=1)  # the task-0 group is cut: its last kept session is deleted unused
    # ... and task 0's run was 2 resets long: the next group opens 2, not 3.
    assert server.counts()["opened"] == 5
    env.get_reward()
    for connection, session in prefetch.drain():  # what the exit hook does with what is left
        close_sessions([session], connection)
    assert wait_for(lambda: server.counts()["closed"] == server.counts()["opened"] == 5)


def test_prefetch_is_off_by_default_and_crosses_processes_as_an_option(counting, server):
    import pickle

    env = counting.CountingEnv(base_url=server.url)
    env.reset(task_index=0)
    assert server.counts()["opened"] == 1
    assert (
        pickle.loads(pickle.dumps(counting.CountingEnv(base_url=server.url, prefetch=8)))._episode.options["prefetch"]
        == 8
    )


def test_a_process_that_sees_half_of_each_group_learns_to_open_half(counting, server):
    """Two ranks split a group of 8 into 4 rows each (tests/test_ranks.py measures it): with
    `prefetch=8` the first group opens 8, and once its run of 4 resets ends the next groups
    open 4, the rows this process has."""
    envs = [counting.CountingEnv(base_url=server.url, prefetch=8) for _ in range(4)]
    for task in (0, 1, 2):
        for env in envs:
            env.reset(task_index=task)
        for env in envs:
            env.get_reward()
    assert server.counts()["opened"] == 8 + 4 + 4
    assert prefetch.rows_per_process(8, 4) == 4 and prefetch.rows_per_process(8, 4, 2) == 8
    assert prefetch.rows_per_process(2, 4) == 2
