"""The adapter owns its reward (TRL's `get_reward()` contract), copies keep the episode, and a
rollout is scored once whichever scorers a user combines. Real servers: every test that plays a
rollout runs on both ORS implementations (`ors_kind`)."""

from __future__ import annotations

import copy
import gc
import pickle

import pytest
from orlgen.runtime import COVERAGE, RewardRule, outcome_reward, outcome_reward_with, summed_reward
from orlgen.runtime.trl.adapter import STATE_ATTRIBUTES

from tests.support.modules import generated


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    return generated("tests.support.envs.stepped:Stepped", tmp_path_factory.mktemp("stepped"))


@pytest.fixture
def stepped_url(serve):
    return serve("tests.support.envs.stepped:Stepped")


@pytest.fixture
def echo_url(serve):
    return serve("examples.echo:Echo")


def play_stepped(module, url, **options):
    env = module.SteppedEnv(base_url=url, **options)
    env.reset(task_index=0)
    for _ in range(4):
        env.advance()
    return env


def test_get_reward_is_the_outcome_and_ends_the_session(echo_module, echo_url):
    env = echo_module.EchoEnv(base_url=echo_url)
    row = echo_module.build_dataset(indices=[0])[0]
    env.reset(**row)
    assert env.get_reward() is None  # nothing scored yet: unscored, not zero
    assert not env._episode.open  # TRL asks for the reward when the rollout is over
    env.reset(**row)
    env.echo(text="hello")
    assert env.get_reward() == 1.0 and env.get_reward() == 1.0  # asking twice is stable


def test_summed_and_outcome_rewards_of_step_rewards(stepped, stepped_url):
    """Step rewards [None, None, 0.005, 0.0]: the outcome is the last non-null (0.0), the sum is 0.005."""
    env = play_stepped(stepped, stepped_url)
    assert env.rewards == [None, None, 0.005, 0.0] and env.outcome == "finished"
    assert env.get_reward() == 0.0
    assert play_stepped(stepped, stepped_url, reward="summed").get_reward() == pytest.approx(0.005)
    assert summed_reward([play_stepped(stepped, stepped_url)]) == [pytest.approx(0.005)]
    assert outcome_reward([play_stepped(stepped, stepped_url)]) == [0.0]
    assert stepped.summed_reward is summed_reward and stepped.outcome_reward is outcome_reward

    unscored = stepped.SteppedEnv(base_url=stepped_url, reward="summed")
    unscored.reset(task_index=0)
    unscored.advance()
    assert unscored.rewards == [None] and unscored.get_reward() is None and summed_reward([unscored]) == [None]


def test_a_bad_reward_option_is_one_clear_error(stepped):
    with pytest.raises(ValueError, match="reward reduction must be one of last, sum, mean, max, min, not 'median'"):
        stepped.SteppedEnv(base_url="http://127.0.0.1:9", reward="median")


def test_a_rollout_is_scored_once_whatever_the_user_combines(stepped, stepped_url):
    """GRPOTrainer runs reward_funcs in order, then the get_reward column: the first scorer owns
    the rollout, the others get None, which TRL leaves out of the sum."""
    COVERAGE.drain()
    envs = [play_stepped(stepped, stepped_url) for _ in range(2)]
    assert summed_reward(envs) == [pytest.approx(0.005)] * 2
    assert outcome_reward(envs) == [None, None]
    assert outcome_reward_with(env_error=-1.0)(envs) == [None, None]
    assert [env.get_reward() for env in envs] == [None, None]
    assert summed_reward(envs) == [pytest.approx(0.005)] * 2  # the owner may ask again
    assert COVERAGE.drain()["scored_fraction"] == 1.0  # two rollouts, counted once each

    fresh = play_stepped(stepped, stepped_url)
    assert fresh.get_reward() == 0.0
    assert summed_reward([fresh]) == [None]  # get_reward read it first
    fresh.reset(task_index=0)  # a new rollout has no owner yet
    assert fresh._episode.scored_by is None


def test_reward_functions_need_environments_and_say_so(stepped):
    with pytest.raises(TypeError, match="AsyncGRPOTrainer does not pass"):
        summed_reward(completions=[[{"role": "assistant", "content": "hi"}]])


def test_copy_keeps_the_episode_but_never_the_session(stepped, stepped_url):
    env = stepped.SteppedEnv(base_url=stepped_url, reward="summed", timeout=30.0)
    env.reset(task_index=0)
    env.advance()
    env.advance()
    env.advance()
    snapshot = copy.copy(env)
    assert type(snapshot) is type(env) and snapshot._episode.options == env._episode.options
    assert snapshot._episode.state == env._episode.state  # the whole state, as a value
    for name in STATE_ATTRIBUTES:  # and as TRL's reward functions read it
        assert getattr(snapshot, name) == getattr(env, name), name
    assert not snapshot._episode.open and env._episode.open
    assert snapshot.rewards is not env.rewards  # the original's next steps do not leak into the copy

    # The copy cannot touch the live session: its calls are refused, its end closes nothing.
    assert snapshot.advance().startswith("Error: advance was not run: no episode is running")
    snapshot.get_reward()
    del snapshot
    gc.collect()
    assert env.advance() == "at square 4"  # the original's session is alive and its own
    assert env.rewards == [None, None, 0.005, 0.0]

    finished = copy.copy(env)
    assert finished.get_reward() == pytest.approx(0.005) and finished.outcome == "finished"
    assert env.get_reward() == pytest.approx(0.005)


def test_pickling_keeps_only_the_options(stepped, stepped_url):
    env = play_stepped(stepped, stepped_url, reward="summed")
    clone = pickle.loads(pickle.dumps(env))
    assert (clone.reward, clone.rewards, clone.outcome, clone._episode._session) == (None, [], "running", None)
    assert clone._episode.options == env._episode.options
    clone.reset(task_index=0)
    for _ in range(4):
        clone.advance()
    assert clone.get_reward() == pytest.approx(0.005)  # the option crossed, the episode did not


def test_the_coverage_counts_what_the_rule_gave(stepped, stepped_url):
    """A rollout that ran, did not finish and scored no step reward is scored by a rule with an
    unfinished reward: the coverage counts it scored (and unfinished), as the trainer got it."""
    COVERAGE.take()
    env = stepped.SteppedEnv(base_url=stepped_url, reward=RewardRule("sum", unfinished=-1.0))
    env.reset(task_index=0)
    env.advance()  # [None]: no reward yet, not finished
    assert env.get_reward() == -1.0
    counts = COVERAGE.take()
    assert (counts["rollouts"], counts["scored"], counts["unfinished"]) == (1.0, 1.0, 1.0)
