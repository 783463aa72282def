"""The env's reward rule is part of the snapshot: `snapshot --reward`, config `reward`, the
generated adapter's default and docstring, and `diff`. Real CLI, real loopback servers."""

from __future__ import annotations

import importlib
import json
import sys

import pytest
from orlgen.serve import ServerProcess
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import REPO

STEPPED = "tests.support.envs.stepped:Stepped"


@pytest.fixture(scope="module")
def stepped_url():
    with ServerProcess(STEPPED) as server:
        yield server.url


def snapshot_cli(*args: str) -> None:
    result = invoke("snapshot", *args)
    assert result.exit_code == 0, result.output


def import_generated(directory, name: str):
    sys.path.insert(0, str(directory))
    try:
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop(name, None)


def scripted_score(module, url: str) -> float | None:
    env = module.environment_factory(base_url=url)  # the default rule, as the module records it
    env.reset(task_index=0)
    for _ in range(4):
        env.advance()
    return env.get_reward()


@pytest.mark.slow
def test_snapshot_records_the_summed_rule_and_the_adapter_defaults_to_it(tmp_path, stepped_url):
    snapshot_cli(STEPPED, "--reward", "summed", "--name", "stepped_sum", "--out", str(tmp_path))
    data = json.loads((tmp_path / "stepped_sum.snapshot.json").read_text())
    assert data["reward"] == "summed"
    module = import_generated(tmp_path, "stepped_sum")
    assert module.environment_factory.spec.reward_rule == "summed"
    assert 'the sum of the non-null step rewards (reward="summed"' in module.environment_factory.__doc__
    # Step rewards [None, None, 0.005, 0.0]: the author's score is their sum, not the last one.
    assert scripted_score(module, stepped_url) == pytest.approx(0.005)
    assert module.environment_factory(base_url=stepped_url, reward="outcome")._episode.rule == "outcome"


def test_the_default_outcome_rule_is_left_out_of_the_snapshot(tmp_path, stepped_url):
    snapshot_cli(STEPPED, "--name", "stepped_last", "--out", str(tmp_path))
    assert '"reward"' not in (tmp_path / "stepped_last.snapshot.json").read_text()  # old snapshots keep their bytes
    module = import_generated(tmp_path, "stepped_last")
    assert 'the last non-null step reward (reward="outcome"' in module.environment_factory.__doc__
    assert scripted_score(module, stepped_url) == 0.0


def test_config_reward_is_recorded_by_sync(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'p'\n\n[tool.orlgen]\nout = 'gen'\n\n[[tool.orlgen.envs]]\ntarget = '{STEPPED}'\n"
        "reward = 'summed'\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    result = invoke("sync")
    assert result.exit_code == 0, result.output
    assert load(tmp_path / "gen" / "stepped.snapshot.json").reward == "summed"
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'p'\n\n[tool.orlgen]\n\n[[tool.orlgen.envs]]\ntarget = '{STEPPED}'\nreward = 'mean'\n"
    )
    bad = invoke("sync")
    assert bad.exit_code == 2 and "envs.0.reward" in bad.stderr


def test_diff_reports_a_change_of_rule(tmp_path, stepped_url):
    snapshot_cli(STEPPED, "--name", "stepped", "--out", str(tmp_path / "old"), "--no-generate")
    snapshot_cli(STEPPED, "--name", "stepped", "--out", str(tmp_path / "new"), "--no-generate", "--reward", "summed")
    old, new = tmp_path / "old" / "stepped.snapshot.json", tmp_path / "new" / "stepped.snapshot.json"
    result = invoke("diff", str(old), "--against", str(new))
    assert result.exit_code == 0  # a prompt-level change: calls still work
    assert result.stdout.split() == ["REWARD_RULE_CHANGED", "PROMPT", "reward:", "outcome", "→", "summed"]
    # Against the live server, the rule is the snapshot's own declaration: no change reported.
    live = invoke("diff", str(new), "--against", stepped_url)
    assert live.exit_code == 0 and "REWARD_RULE" not in live.stdout
