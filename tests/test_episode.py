"""`orlgen.runtime.Episode`, the rollout addressed by tool name that the verifiers and skyrl shims
use, against both ORS server implementations (the `ors_server` fixture). The env's spec comes from
its generated TRL module (`both_module.SPEC`): an Episode plays by the same spec."""

from __future__ import annotations

from orlgen.runtime.episode import Episode

from tests.support.envs.both import TASKS

TARGET = TASKS["train"][0]["target"]


def test_a_scripted_episode_scores_by_the_env_rule_and_deletes_its_session(both_module, ors_server):
    with Episode(both_module.SPEC, name="BothEnv", base_url=ors_server.url) as episode:
        assert episode.start("train", 0) == "Task 0: find the target number, then submit it."
        assert episode.call("guess", {"guess": 5}, both_module.GuessParams) == "higher"
        assert episode.call("submit", {"answer": TARGET}) == "correct"
        assert (episode.state.finished, episode.state.outcome, episode.state.tool_calls) == (True, "finished", 2)
        assert episode.reward() == 1.0
        assert episode.state._session is None  # the finished episode's session is gone


def test_bad_arguments_and_unoffered_tools_never_reach_the_server(both_module, ors_server):
    with Episode(both_module.SPEC, base_url=ors_server.url) as episode:
        episode.start("train", 1)  # an odd task: `hint` is offered on even tasks only
        assert episode.call("guess", {"guess": 500}, both_module.GuessParams).startswith(
            "Error: invalid arguments for guess: guess:"
        )
        assert episode.call("hint", {}) == "Error: hint is not offered on this task (train[1]); it was not run"
        assert "hint" not in (episode.offered or set())
        assert (episode.state.tool_errors, episode.state.rewards, episode.state.outcome) == (2, [], "running")
        assert episode.reward() is None  # nothing scored the rollout


def test_images_arrive_as_content_parts(both_module, ors_server):
    with Episode(both_module.SPEC, base_url=ors_server.url) as episode:
        episode.start("train", 0)
        image, text = episode.call("look", {})
        assert (image["type"], image["image"].size, text["text"]) == ("image", (1, 1), "the board")
