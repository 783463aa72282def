"""The env's reward rule is part of the snapshot: `snapshot --reward`, config `reward`, the
generated adapter's default and docstring, and `diff`. Real CLI, real loopback servers."""

from __future__ import annotations

import importlib
import json
import sys

import pytest
from orlgen.runtime import RewardRule
from orlgen.serve import ServerProcess
from orlgen.snapshot.model import Reward, load

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
    assert data["reward"] == "sum"  # "summed", the name before 0.3, is written as 0.3 names it
    module = import_generated(tmp_path, "stepped_sum")
    assert module.environment_factory.spec.reward_rule == RewardRule("sum")
    assert "SPEC.reward_rule: sum;" in module.environment_factory.__doc__
    assert "Reward: the sum of the non-null step rewards" in module.__doc__
    # Step rewards [None, None, 0.005, 0.0]: the author's score is their sum, not the last one.
    assert scripted_score(module, stepped_url) == pytest.approx(0.005)
    assert module.environment_factory(base_url=stepped_url, reward="outcome")._episode.rule == RewardRule("last")


def test_the_default_rule_is_left_out_of_the_snapshot(tmp_path, stepped_url):
    snapshot_cli(STEPPED, "--name", "stepped_last", "--out", str(tmp_path))
    assert '"reward"' not in (tmp_path / "stepped_last.snapshot.json").read_text()  # old snapshots keep their bytes
    module = import_generated(tmp_path, "stepped_last")
    assert "SPEC.reward_rule: last;" in module.environment_factory.__doc__
    assert "reward_rule=" not in (tmp_path / "stepped_last.py").read_text()
    assert scripted_score(module, stepped_url) == 0.0


def test_a_shaped_rule_is_recorded_shown_and_recaptured_the_same_way(tmp_path, stepped_url):
    snapshot_cli(
        STEPPED, "--reward", "mean", "--unfinished-reward", "-1", "--reward-clamp", "-1:0.002", "--out", str(tmp_path)
    )
    data = json.loads((tmp_path / "stepped.snapshot.json").read_text())
    assert data["reward"] == {"reduce": "mean", "unfinished": -1.0, "clamp": [-1.0, 0.002]}
    source = (tmp_path / "stepped.py").read_text()
    assert 'reward_rule=RewardRule("mean", unfinished=-1.0, clamp=(-1.0, 0.002)),' in source
    assert (
        "Reward: the mean of the non-null step rewards; -1.0 for a rollout that ran and did not finish; clamped to [-1.0, 0.002]"
        in " ".join(source.split())
    )
    assert "--reward mean --unfinished-reward -1.0 --reward-clamp -1.0:0.002" in source  # the re-capture command
    module = import_generated(tmp_path, "stepped")
    # [None, None, 0.005, 0.0]: the mean 0.0025, clamped to 0.002.
    assert scripted_score(module, stepped_url) == pytest.approx(0.002)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--reward-clamp", "1"), "reward clamp must be LO:HI, two numbers, e.g. 0:1"),
        (("--reward-clamp", "1:0"), "reward clamp 1.0:0.0 has its low bound above its high one"),
        (
            ("--unfinished-reward", "-1", "--reward-clamp", "0:1"),
            "unfinished reward -1.0 lies outside the reward clamp 0.0:1.0",
        ),
        (("--unfinished-reward", "nan"), "unfinished reward must be a finite number, not nan"),
    ],
)
def test_a_bad_rule_is_one_line_and_writes_nothing(tmp_path, flags, message):
    result = invoke("snapshot", STEPPED, "--out", str(tmp_path), *flags)
    assert result.exit_code == 2 and message in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_config_reward_is_recorded_by_sync(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'p'\n\n[tool.orlgen]\nout = 'gen'\n\n[[tool.orlgen.envs]]\ntarget = '{STEPPED}'\n"
        "reward = 'summed'\nunfinished_reward = 0\nreward_clamp = [0, 1]\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    result = invoke("sync")
    assert result.exit_code == 0, result.output
    assert load(tmp_path / "gen" / "stepped.snapshot.json").reward.rule == RewardRule("sum", 0.0, (0.0, 1.0))
    for keys, error in [
        ("reward = 'median'", "reward reduction must be one of last, sum, mean, max, min, not 'median'"),
        ("reward_clamp = '0:1'\nunfinished_reward = 2", "unfinished reward 2.0 lies outside the reward clamp 0.0:1.0"),
    ]:
        (tmp_path / "pyproject.toml").write_text(
            f"[project]\nname = 'p'\n\n[tool.orlgen]\n\n[[tool.orlgen.envs]]\ntarget = '{STEPPED}'\n{keys}\n"
        )
        bad = invoke("sync")
        assert bad.exit_code == 2 and "envs.0" in bad.stderr and error in bad.stderr, bad.stderr


def test_diff_reports_a_change_of_rule(tmp_path, stepped_url):
    snapshot_cli(STEPPED, "--name", "stepped", "--out", str(tmp_path / "old"), "--no-generate")
    snapshot_cli(STEPPED, "--name", "stepped", "--out", str(tmp_path / "new"), "--no-generate", "--reward", "summed")
    old, new = tmp_path / "old" / "stepped.snapshot.json", tmp_path / "new" / "stepped.snapshot.json"
    result = invoke("diff", str(old), "--against", str(new))
    assert result.exit_code == 0  # a prompt-level change: calls still work
    assert result.stdout.split() == ["REWARD_RULE_CHANGED", "PROMPT", "reward:", "last", "→", "sum"]
    # Against the live server, the rule is the snapshot's own declaration: no change reported.
    live = invoke("diff", str(new), "--against", stepped_url)
    assert live.exit_code == 0 and "REWARD_RULE" not in live.stdout
    # A snapshot of orlgen < 0.3 spelled the rule "summed": the same rule, no change.
    spelled = load(new).model_copy(update={"reward": Reward(reduce="summed")})
    for path, data in spelled.files(tmp_path / "spelled" / "stepped.snapshot.json").items():
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    assert load(tmp_path / "spelled" / "stepped.snapshot.json").reward.reduce == "summed"  # kept as written
    same = invoke("diff", str(tmp_path / "spelled" / "stepped.snapshot.json"), "--against", str(new))
    assert same.exit_code == 0 and "REWARD_RULE" not in same.stdout
    shaped = invoke("diff", str(new), "--against", str(_shaped(tmp_path, new)))
    assert shaped.stdout.split()[:4] == ["REWARD_RULE_CHANGED", "PROMPT", "reward:", "sum"]
    assert "sum → sum, unfinished -1.0, clamp -1.0:1.0" in shaped.stdout


def _shaped(tmp_path, snapshot):
    """`snapshot` with a penalty and a clamp added to its rule, written as a capture writes it."""
    shaped = load(snapshot).model_copy(update={"reward": Reward.declared("sum", -1.0, "-1:1")})
    target = tmp_path / "shaped" / "stepped.snapshot.json"
    target.parent.mkdir()
    for path, data in shaped.files(target).items():
        path.write_bytes(data)
    return target


# The rule's arithmetic, case by case (hand-computed; the end-to-end table through every trainer
# is tests/test_reward_shaping.py). Steps [0.5, None, 2.0, -1.0].
STEPS = [0.5, None, 2.0, -1.0]


@pytest.mark.parametrize(
    ("rule", "finished", "expected"),
    [
        (RewardRule("last"), True, -1.0),
        (RewardRule("outcome"), True, -1.0),
        (RewardRule("sum"), True, 1.5),
        (RewardRule("summed"), True, 1.5),
        (RewardRule("mean"), True, 0.5),  # of the three non-null rewards
        (RewardRule("max"), True, 2.0),
        (RewardRule("min"), True, -1.0),
        (RewardRule("max", clamp=(-0.5, 1.0)), True, 1.0),
        (RewardRule("min", clamp=(-0.5, 1.0)), True, -0.5),
        (RewardRule("sum", unfinished=-0.5), True, 1.5),  # it finished: no penalty
        (RewardRule("sum", unfinished=-0.5), False, -0.5),  # it ran and did not finish
        (RewardRule("sum"), False, 1.5),  # no penalty declared: reduced like any other
    ],
)
def test_the_rule_reduces_penalises_and_clamps(rule, finished, expected):
    assert rule.apply(STEPS, ran=True, finished=finished, failed=False) == pytest.approx(expected)


@pytest.mark.parametrize("rule", [RewardRule(), RewardRule("mean", unfinished=-1.0, clamp=(-1.0, 1.0))])
def test_unscored_stays_unscored_whatever_the_rule(rule):
    assert rule.apply(STEPS, ran=True, finished=True, failed=True) is None  # the env failed it
    assert rule.apply([None, None], ran=True, finished=True, failed=False) is None  # nothing scored it
    assert rule.apply([], ran=False, finished=False, failed=False) is None  # it never ran: no penalty


def test_a_contract_2_modules_string_reads_as_its_rule():
    spec = load_module_spec(reward_rule="summed")
    assert spec.reward_rule == RewardRule("sum") and str(spec.reward_rule) == "sum"


def load_module_spec(**fields):
    """The echo module's SPEC with `fields` replaced, as a contract-2 module would build it."""
    from dataclasses import replace

    from generated import echo

    return replace(echo.SPEC, **fields)
