"""The verl module (`<env>_verl.py` and its tool config) in verl 0.9.1's own machinery, in the
verl venv: the tool YAML loaded by `initialize_tools_from_config`, trajectories played by verl's
`ToolAgentLoop.run()` as verl's CPU tests drive it (`tests/support/verl_trajectories.py`: only
the model and tokenizer are a script), against the both-env on each real ORS server wearing the
counting middleware of `tests.support.servers.capacity` (no fault switched on)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.support.framework_venvs import verl_python
from tests.support.modules import REPO, generated
from tests.support.servers.both import KINDS, BothServer
from tests.support.servers.capacity import stats
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow
COUNTING = ("tests.support.servers.capacity:Faults",)
HELPDESK_TOOLS = REPO / "generated" / "helpdesk_verl_tools.yaml"
TRAJECTORIES = REPO / "tests" / "support" / "verl_trajectories.py"
VERL_PATH = os.pathsep.join([str(REPO), str(REPO / "generated")])


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("both")
    generated("tests.support.envs.both:Both", out, ("trl", "verl"))
    return out


@pytest.fixture(scope="module", params=KINDS)
def played(request, module_dir):
    with BothServer(request.param, middleware=COUNTING) as server:
        before = stats(server.url)
        done = subprocess.run(
            [verl_python(), TRAJECTORIES, module_dir, "both_verl", server.url, "both", HELPDESK_TOOLS],
            cwd=module_dir,
            env={**os.environ, "PYTHONPATH": VERL_PATH},
            capture_output=True,
            text=True,
            timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert wait_for(lambda: stats(server.url)["open"] == 0)
        yield json.loads(done.stdout.splitlines()[-1]), before, stats(server.url)


def test_a_winning_trajectory_scores_the_envs_reward_through_reward_score(played):
    """A text-only model (the loop has no `processor`: verl refuses it images) reads a marker."""
    report, _, _ = played
    won = report["played"][0]
    assert won["reward_score"] == 1.0 and won["extra"]["ors_scored"] == 1.0 and won["extra"]["ors_finished"] == 1.0
    assert won["prompt"].endswith("Task 0: find the target number, then submit it.")  # the session's prompt
    look, submitted = won["answers"][:2]
    assert look.startswith("[image: image/png, 1x1") and look.endswith("the board") and submitted == "correct"


def test_each_trajectory_has_its_own_session_deleted_at_its_end(played):
    report, before, after = played
    assert after["created"] - before["created"] == 4 and after["deleted"] - before["deleted"] == 4
    # The runtime's counters ride with each sample: the batch's sum is the run's.
    assert sum(trajectory["extra"]["ors_sessions_opened"] for trajectory in report["played"]) == 4
    assert all(trajectory["extra"]["ors_breaker_rejections"] == 0.0 for trajectory in report["played"])


def test_a_bad_argument_is_answered_and_nothing_is_sent(played):
    report, before, after = played
    bad = report["played"][1]
    assert bad["answers"][0].startswith("Error: invalid arguments for guess: guess:")
    assert bad["reward_score"] == 1.0 and bad["extra"]["ors_tool_errors"] == 1.0
    # sent: look, submit, submit, count; never the bad guess nor the hint
    assert after["calls"] - before["calls"] == 4


def test_an_unscored_trajectory_gets_the_configured_reward_and_says_so(played):
    idle = report_of(played)[2]
    assert idle["reward_score"] == 0.0 and idle["extra"]["ors_scored"] == 0.0 and idle["extra"]["ors_finished"] == 0.0


def test_a_task_only_tool_is_offered_only_on_its_tasks(played):
    report, _, _ = played
    selections = {row["extra_info"]["task_index"]: row["extra_info"].get("tool_selection") for row in report["rows"]}
    assert "hint" in (selections[0] or ["hint"]) and selections[1] is not None and "hint" not in selections[1]
    refused = report_of(played)[3]["answers"][0]
    assert refused.startswith("Unknown function 'hint'") or "not offered on this task" in refused


def test_the_checked_in_tool_configs_load_in_verl(played):
    report, _, _ = played
    assert sorted(report["more"][str(HELPDESK_TOOLS)]) == [
        "cancel_order", "escalate", "get_order", "issue_refund", "list_policies", "search_orders", "send_reply",
        "submit_resolution", "update_shipping",
    ]  # fmt: skip
    assert sorted(report["tools"]) == ["count", "crash", "guess", "hint", "keys", "long", "look", "submit", "wait"]


def report_of(played):
    return played[0]["played"]


def test_a_terminal_tool_grades_the_final_message(tmp_path):
    """examples/quiz.py grades the model's final plain message with its hidden @terminal tool."""
    from orlgen.serve import ServerProcess

    generated("examples.quiz:Quiz", tmp_path, ("trl", "verl"))
    with ServerProcess("examples.quiz:Quiz") as server:
        done = subprocess.run(
            [verl_python(), TRAJECTORIES, tmp_path, "quiz_verl", server.url, "quiz"],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": VERL_PATH},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["right"]["reward_score"] == 1.0 and report["right"]["extra"]["ors_finished"] == 1.0
    assert report["wrong"]["reward_score"] == 0.0 and report["wrong"]["extra"]["ors_scored"] == 1.0
