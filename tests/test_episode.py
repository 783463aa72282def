"""`orlgen.runtime.Episode`, the rollout addressed by tool name that the verifiers and skyrl shims
use, against both ORS server implementations (the `ors_server` fixture). The env's spec comes from
its generated TRL module (`both_module.SPEC`): an Episode plays by the same spec."""

from __future__ import annotations

from orlgen.runtime.episode import Episode, Failure, Step

from tests.support.envs.both import TASKS

TARGET = TASKS["train"][0]["target"]


def test_a_scripted_episode_scores_by_the_env_rule_and_deletes_its_session(both_module, ors_server):
    with Episode(both_module.SPEC, name="BothEnv", base_url=ors_server.url) as episode:
        assert episode.start("train", 0).content == "Task 0: find the target number, then submit it."
        assert episode.call("guess", {"guess": 5}, both_module.GuessParams) == Step("higher", metadata=None)
        assert episode.call("submit", {"answer": TARGET}) == Step("correct", reward=1.0, finished=True)
        assert (episode.state.finished, episode.state.outcome, episode.state.tool_calls) == (True, "finished", 2)
        assert not episode.open  # the env finished the episode: its session is gone already
        assert episode.score() == 1.0


def test_bad_arguments_and_unoffered_tools_never_reach_the_server(both_module, ors_server):
    with Episode(both_module.SPEC, base_url=ors_server.url) as episode:
        episode.start("train", 1)  # an odd task: `hint` is offered on even tasks only
        bad = episode.call("guess", {"guess": 500}, both_module.GuessParams)
        assert bad.failure is not None and bad.failure.kind == "model"
        assert bad.content == f"Error: {bad.failure.message}"
        assert bad.failure.message.startswith("invalid arguments for guess: guess:")
        unoffered = episode.call("hint", {})
        assert unoffered.failure == Failure("model", "hint is not offered on this task (train[1]); it was not run")
        assert "hint" not in (episode.offered or set())
        assert (episode.state.tool_errors, episode.state.rewards, episode.state.outcome) == (2, (), "running")
        assert episode.open  # the model's mistakes never end the rollout
        assert episode.score() is None  # nothing scored the rollout


def test_images_arrive_as_content_parts(both_module, ors_server):
    with Episode(both_module.SPEC, base_url=ors_server.url) as episode:
        episode.start("train", 0)
        image, text = episode.call("look", {}).content
        assert (image["type"], image["image"].size, text["text"]) == ("image", (1, 1), "the board")


def test_an_environment_failure_is_data_and_ends_the_rollout_unscored(both_module, ors_server):
    """A tool that raises on the server: the step says so as data (`failure.kind == "env"`), the
    rollout is over and unscored, its session deleted; the model still reads one line."""
    with Episode(both_module.SPEC, name="BothEnv", base_url=ors_server.url) as episode:
        episode.start("train", 0)
        step = episode.call("crash", {})
        assert step.failure is not None and step.failure.kind == "env" and step.finished
        assert step.content == f"Error: the environment failed ({step.failure.message}); the episode is over."
        assert episode.state.outcome == "env_error" and episode.state.error == step.failure.message
        assert not episode.open
        after = episode.call("guess", {"guess": 5})
        assert after.failure == Failure("model", "guess was not run: the episode is over")
        assert episode.score() is None


def test_a_copy_keeps_the_state_and_no_session(both_module, ors_server):
    """What TRL's async worker relies on, now the core's: a copy carries the rollout's state as a
    value and never the session, which stays the original's to call and delete."""
    import copy

    with Episode(both_module.SPEC, base_url=ors_server.url) as episode:
        episode.start("train", 0)
        episode.call("guess", {"guess": 5})
        clone = copy.copy(episode)
        assert clone.state == episode.state and clone.state.tool_calls == 1
        assert episode.open and not clone.open
        assert clone.options == episode.options
