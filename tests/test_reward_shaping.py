"""Reward shaping through real rollouts (issue 43 item 1): each reduction, the unfinished
penalty and the clamp give the same number per rollout in the TRL module, the agent module,
`orlgen eval` (of both), skyrl-gym's `make`, verl's `ToolAgentLoop.run()` and verifiers' `vf-eval`.

Real parts: the graded env (`tests/support/envs/graded.py`, each task's step rewards in its
spec) on one loopback ORS server; one snapshot per rule captured from it by the `orlgen
snapshot` command with the rule's flags, its modules rendered by `orlgen generate` for the
trl, agent, skyrl, verl and verifiers trainers; the model is a script (`tests/support/graded_policy.py`,
in-process for the agent loop and eval, the stub endpoint for vf-eval). The expected table is
computed by hand from the tasks' step rewards and `RewardRule`'s docstring, not by the rule.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from orlgen.serve import ServerProcess

from bench.chat_server import ChatServer, serving
from tests.support.cli import invoke
from tests.support.graded_policy import Plans
from tests.support.modules import REPO

GRADED = "tests.support.envs.graded:Graded"
# Step rewards: task 0 [0.5, None, 2.0, -1.0], task 1 [None, 0.25], task 2 [None, None].
ROLLOUTS = {  # (task index, advance calls); a task's last step finishes it, a text answer stops it
    "A": (0, 4),  # finished
    "B": (0, 2),  # unfinished, after [0.5, None]
    "C": (1, 2),  # finished, one reward
    "D": (2, 2),  # finished with no reward: unscored
    "E": (0, 0),  # a session opened, no call, unfinished
}
RULES = {
    "last": ("--reward", "last"),
    "sum": ("--reward", "sum"),
    "mean": ("--reward", "mean"),
    "max": ("--reward", "max"),
    "min": ("--reward", "min"),
    "shaped": ("--reward", "max", "--unfinished-reward", "-0.5", "--reward-clamp", "-0.5:1.0"),
}
EXPECTED = {  # None: unscored
    "last": {"A": -1.0, "B": 0.5, "C": 0.25, "D": None, "E": None},
    "sum": {"A": 1.5, "B": 0.5, "C": 0.25, "D": None, "E": None},
    "mean": {"A": 0.5, "B": 0.5, "C": 0.25, "D": None, "E": None},
    "max": {"A": 2.0, "B": 0.5, "C": 0.25, "D": None, "E": None},
    "min": {"A": -1.0, "B": 0.5, "C": 0.25, "D": None, "E": None},
    "shaped": {"A": 1.0, "B": -0.5, "C": 0.25, "D": None, "E": -0.5},  # A: 2.0 clamped; B, E: the penalty
}
TRAINERS = ("trl", "agent", "skyrl", "verl", "verifiers")


@pytest.fixture(scope="module")
def graded_url():
    with ServerProcess(GRADED) as server:
        yield server.url


@pytest.fixture(scope="module")
def rendered(graded_url, tmp_path_factory) -> dict[str, Path]:
    """Per rule, the directory holding its snapshot (`graded_<rule>`) and the trainers' modules:
    captured by the CLI from the running server (one env per directory, as `snapshot` asks)."""
    directories = {}
    for rule, flags in RULES.items():
        out = tmp_path_factory.mktemp(rule)
        name = f"graded_{rule}"
        captured = invoke("snapshot", graded_url, "--name", name, "--out", out, "--no-generate", *flags)
        assert captured.exit_code == 0, captured.output
        trainers = [arg for trainer in TRAINERS for arg in ("--trainer", trainer)]
        rendered = invoke("generate", out / f"{name}.snapshot.json", *trainers)
        assert rendered.exit_code == 0, rendered.output
        directories[rule] = out
    return directories


def imported(directory: Path, name: str):
    """The generated module `name` of `directory`, imported afresh."""
    sys.path.insert(0, str(directory))
    try:
        sys.modules.pop(name, None)
        return __import__(name)
    finally:
        sys.path.remove(str(directory))


def assert_table(measured: dict[str, dict[str, float | None]], rules=RULES) -> None:
    """`measured` is the expected table of `rules`: floats approximately, unscored exactly."""
    expected = {rule: EXPECTED[rule] for rule in rules}
    same = measured.keys() == expected.keys() and all(
        measured[rule].keys() == row.keys()
        and all(
            (want is None and measured[rule][key] is None)
            or (want is not None and measured[rule][key] == pytest.approx(want))
            for key, want in row.items()
        )
        for rule, row in expected.items()
    )
    assert same, f"measured {measured}\nexpected {expected}"


def child_json(command: list, job) -> dict:
    """The last line a child process of a framework's venv prints (JSON), given `job` on stdin;
    it imports this repository's support code, nothing of this process's orlgen settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ORLGEN_", "PYTHON"))}
    done = subprocess.run(
        [str(part) for part in command], input=json.dumps(job), capture_output=True, text=True, timeout=600,
        cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_the_trl_module(rendered, graded_url):
    measured: dict[str, dict[str, float | None]] = {}
    for rule, directory in rendered.items():
        module = imported(directory, f"graded_{rule}")
        measured[rule] = {}
        for letter, (task, calls) in ROLLOUTS.items():
            env = module.environment_factory(base_url=graded_url)
            env.reset(task_index=task)
            for _ in range(calls):
                env.advance()
            measured[rule][letter] = env.get_reward()
    assert_table(measured)


def test_the_agent_modules_run_episode(rendered, graded_url):
    measured: dict[str, dict[str, float | None]] = {}
    stops = Counter()
    with serving(ChatServer(Plans([]).message)) as endpoint:  # each rollout's plan set below
        for rule, directory in rendered.items():
            agent = imported(directory, f"graded_{rule}_agent")
            measured[rule] = {}
            for letter, (task, calls) in ROLLOUTS.items():
                endpoint.policy = Plans([(task, calls)]).message
                trajectory = asyncio.run(
                    agent.run_episode(task, base_url=endpoint.url, model="m", env={"base_url": graded_url})
                )
                assert trajectory.metrics["tool_calls"] == calls
                measured[rule][letter] = trajectory.reward
                stops[letter, trajectory.stop] += 1
    assert_table(measured)
    runs = len(RULES)
    assert stops == {("A", "episode_over"): runs, ("C", "episode_over"): runs, ("D", "episode_over"): runs,
                     ("B", "answered"): runs, ("E", "answered"): runs}  # fmt: skip


# `orlgen eval -n 3 -k 3`: three rollouts of each task, played at once; the script plays task 0's
# three plans (E, B, A) whichever rollout asks first, and C and D three times each.
EVAL_PLANS = [ROLLOUTS["A"], ROLLOUTS["B"], ROLLOUTS["E"], *[ROLLOUTS["C"]] * 3, *[ROLLOUTS["D"]] * 3]
LETTERS = {plan: letter for letter, plan in ROLLOUTS.items()}


@pytest.mark.parametrize("trainer", ["trl", "agent"])
def test_orlgen_eval(rendered, graded_url, trainer):
    measured: dict[str, dict[str, float | None]] = {}
    for rule, directory in rendered.items():
        module = directory / (f"graded_{rule}.py" if trainer == "trl" else f"graded_{rule}_agent.py")
        with serving(ChatServer(Plans(EVAL_PLANS).message)) as endpoint:
            result = invoke(
                "eval", module, "--base-url", endpoint.url, "--model", "m", "-n", 3, "-k", 3,
                "--env-url", graded_url, "--out", "-",
            )  # fmt: skip
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        played = Counter(LETTERS[row["task_index"], row["tool_calls"]] for row in rows)
        assert played == {"A": 1, "B": 1, "E": 1, "C": 3, "D": 3}
        rewards = {}
        for row in rows:
            letter = LETTERS[row["task_index"], row["tool_calls"]]
            assert rewards.setdefault(letter, row["reward"]) == row["reward"]  # C's, D's three agree
        measured[rule] = {letter: rewards[letter] for letter in ROLLOUTS}
    assert_table(measured)


@pytest.mark.slow
def test_skyrl_gym(rendered, graded_url):
    """All rules and rollouts in one child process of the skyrl venv (`tests/support/skyrl_rules.py`):
    skyrl_gym.make, init, one `<tool_call>` turn per call, a plain-text turn to stop."""
    from tests.support.framework_venvs import skyrl_python

    advance = '<tool_call>\n{"name": "advance", "arguments": {}}\n</tool_call>'
    job = {
        "paths": [str(directory) for directory in rendered.values()],
        "env_config": {"base_url": graded_url},
        "modules": {
            f"graded_{rule}_skyrl": [
                {"split": "train", "index": task, "turns": [advance] * calls + ["I stop here."]}
                for task, calls in ROLLOUTS.values()
            ]
            for rule in RULES
        },
    }
    played = child_json([skyrl_python(), "-m", "tests.support.skyrl_rules"], job)
    measured = {}
    for rule in RULES:
        episodes = played[f"graded_{rule}_skyrl"]
        measured[rule] = {}
        for letter, episode in zip(ROLLOUTS, episodes, strict=True):
            metrics, steps = episode["metrics"], episode["steps"]
            assert steps[-1]["done"] and all(step["reward"] == 0.0 for step in steps[:-1])
            # SkyRL sums the step rewards: the last step's is the rollout's (0.0 when unscored)
            reward = metrics.get("reward")
            assert steps[-1]["reward"] == (0.0 if reward is None else pytest.approx(reward))
            assert metrics["scored"] == float(reward is not None)
            measured[rule][letter] = reward
    assert_table(measured)


@pytest.mark.slow
def test_verl_agent_loop(rendered, graded_url):
    """All rules' rollouts in one child process of the verl venv (`tests/support/verl_trajectories.py`,
    its `graded` scenario): verl's `ToolAgentLoop.run()`, the model a script of `advance` calls and
    a text answer. verl needs a number for every sample: an unscored rollout's `reward_score` is the
    loop's `unscored_reward` (0.0) and `ors_scored` 0.0 says it was unscored."""
    from tests.support.framework_venvs import verl_python

    first, *others = RULES
    played = child_json(
        [
            verl_python(), REPO / "tests" / "support" / "verl_trajectories.py", rendered[first],
            f"graded_{first}_verl", graded_url, "graded",
            *[f"{rendered[rule]}:graded_{rule}_verl" for rule in others],
        ],
        list(ROLLOUTS.values()),
    )  # fmt: skip
    measured = {}
    for rule in RULES:
        trajectories = played[f"graded_{rule}_verl"]
        measured[rule] = {}
        for letter, trajectory in zip(ROLLOUTS, trajectories, strict=True):
            scored = trajectory["extra"]["ors_scored"] == 1.0
            assert scored or trajectory["reward_score"] == 0.0, trajectory
            measured[rule][letter] = trajectory["reward_score"] if scored else None
    assert_table(measured)


@pytest.mark.slow
def test_vf_eval_with_the_shaped_rule(rendered, graded_url, tmp_path):
    """vf-eval is slow: the shaped rule only, `-n 3 -r 3` scripted as for `orlgen eval`. vf-eval's
    own `env_reward` is 0.0 for an unscored rollout; the `scored` metric says which were."""
    from tests.support.verifiers_eval import vf_eval

    script = "graded:" + ",".join(f"{task}:{calls}" for task, calls in EVAL_PLANS)
    base_url = ("--env.taskset.task.base-url", graded_url)
    evaluated = vf_eval(
        "graded_shaped_verifiers", rendered["shaped"], tmp_path, {}, tasks=3, rollouts=3, script=script, args=base_url
    )
    assert [trace["errors"] for trace in evaluated.traces] == [[]] * 9
    measured: dict[str, float | None] = {}
    played = Counter()
    for trace in evaluated.traces:
        metrics = trace["metrics"]
        letter = LETTERS[trace["task"]["data"]["task_index"], int(metrics["tool_calls"])]
        played[letter] += 1
        reward = trace["rewards"]["env_reward"]["score"]
        measured[letter] = reward if metrics["scored"] else None
        assert metrics["scored"] or reward == 0.0
    assert played == {"A": 1, "B": 1, "E": 1, "C": 3, "D": 3}
    assert_table({"shaped": measured}, rules=("shaped",))
