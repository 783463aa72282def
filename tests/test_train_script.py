"""`examples/train_grpo.py`, run as a user runs it: a subprocess against a served environment."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys

import pytest

from tests.support.modules import REPO

pytestmark = pytest.mark.slow  # examples/train_grpo.py run in a child process

SCRIPT = REPO / "examples" / "train_grpo.py"


def run_script(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize(
    "extra, reward",
    [([], None), (["--unfinished-reward", "0"], 0.0)],
    ids=["unscored-is-none", "unfinished-reward"],
)
def test_tiny_smoke_run_trains_one_step_against_a_served_env(extra, reward, echo_url, tmp_path):
    """The README's smoke command, offline (HF_HUB_OFFLINE): the tiny random Qwen3, one GRPO step on
    the echo env, 4 rollouts that each reached the server. A random model makes no tool call, so no
    rollout finishes: the logged reward is None (unscored, not a zero) unless the run gives
    unfinished rollouts an explicit reward, and orlgen's coverage metrics say why."""
    result = run_script(
        "--module", "generated.echo", "--base-url", echo_url, "--tiny", "--max-steps", "1",
        "--output-dir", str(tmp_path / "out"), *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]

    logs = [ast.literal_eval(line) for line in result.stdout.splitlines() if line.startswith("{'loss'")]
    assert len(logs) == 1, result.stdout  # max_steps=1, logging_steps=1
    metrics = {key: value if value is None else float(value) for key, value in logs[0].items()}
    assert metrics["reward"] == reward
    assert metrics["orlgen/scored_fraction"] == 0.0 and metrics["orlgen/tool_calls_mean"] == 0.0
    assert metrics["orlgen/env_errors"] == 0.0 and metrics["orlgen/unfinished"] == 4.0
    assert metrics["tools/call_frequency"] == 0.0

    summary = re.search(r"^last batch: (\d+) rollouts, outcomes (\{.*\}), rewards (\[.*\])$", result.stdout, re.M)
    assert summary, result.stdout
    assert (int(summary[1]), ast.literal_eval(summary[2]), ast.literal_eval(summary[3])) == (
        4,
        {"running": 4},  # every reset opened a session; no rollout finished or failed
        [None] * 4,
    )


def test_bad_invocations_fail_with_one_line(echo_url):
    """Usage errors exit non-zero with one readable line, before any model is loaded."""
    result = run_script("--module", "generated.support_mix", "--base-url", echo_url, "--tiny")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        f"--base-url {echo_url!r}: a mixture needs NAME=URL, NAME one of ['echo', 'helpdesk']"
    )
    result = run_script("--module", "generated.support_mix", "--counts", "echo=9", "--tiny")
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == "train_grpo: error: echo has 8 tasks in 'train', not 9"
