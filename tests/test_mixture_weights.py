"""A mixture's sampling weights, from `[[tool.orlgen.mixtures]] weights = {...}` to the generated
module: `orlgen generate` in a tiny project (echo and helpdesk's snapshots, as generated/ has
them) records them as `build_dataset`'s default and in its docstring; a seeded draw takes rows in
those shares, and TRL's own sampler (`RepeatSampler`, what GRPOTrainer iterates) plays every row
`num_generations` times, so completions per env follow the same shares.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from orlgen.config import load_config
from orlgen.errors import ConfigFileError

from tests.support.cli import invoke
from tests.support.modules import REPO, load_module

WEIGHTS = {"echo": 1.0, "helpdesk": 3.0}


def _project(root: Path, mixture: str) -> Path:
    (root / "pyproject.toml").write_text(
        f'[tool.orlgen]\nout = "generated"\n\n[[tool.orlgen.mixtures]]\n{mixture}\n', encoding="utf-8"
    )
    out = root / "generated"
    out.mkdir()
    for env in ("echo", "helpdesk"):
        for suffix in (".snapshot.json", ".tasks.jsonl"):
            shutil.copyfile(REPO / "generated" / f"{env}{suffix}", out / f"{env}{suffix}")
    return out


@pytest.fixture(scope="module")
def weighted(tmp_path_factory):
    out = _project(
        tmp_path_factory.mktemp("weighted"),
        'name = "mix"\nenvs = ["echo", "helpdesk"]\nweights = { echo = 1, helpdesk = 3 }',
    )
    result = invoke("generate", "--no-cache", out)
    assert result.exit_code == 0, result.output
    return load_module(out / "mix.py")


def test_the_weights_are_recorded_in_the_module(weighted):
    text = Path(weighted.__file__).read_text(encoding="utf-8")
    assert 'weights={"echo": 1.0, "helpdesk": 3.0}' in text
    assert "Sampling weights (the mixture config's): echo 1, helpdesk 3." in weighted.__doc__
    assert "Recorded weights (the mixture config's): {'echo': 1.0, 'helpdesk': 3.0}." in weighted.build_dataset.__doc__


def test_a_seeded_draw_takes_rows_in_the_recorded_shares(weighted):
    for seed in range(5):
        rows = Counter(weighted.build_dataset(num_tasks=32, seed=seed)["environment"])
        assert rows == {"echo": 8, "helpdesk": 24}
    odd = Counter(weighted.build_dataset(num_tasks=10, seed=3)["environment"])  # 2.5 : 7.5, within one row
    assert sum(odd.values()) == 10 and all(abs(odd[env] - 10 * w / 4) <= 1 for env, w in WEIGHTS.items())
    # What a call gives wins: counts, or other weights; nothing at all is still every task.
    assert Counter(weighted.build_dataset(counts={"echo": 2})["environment"]) == {"echo": 2}
    assert Counter(weighted.build_dataset(weights={"echo": 1}, num_tasks=4)["environment"]) == {"echo": 4}
    train = weighted.echo.SPLITS["train"] + weighted.helpdesk.SPLITS["train"]
    assert len(weighted.build_dataset()) == train


@pytest.mark.slow
def test_grpo_plays_each_row_num_generations_times_so_completions_keep_the_shares(weighted):
    from trl.trainer.utils import RepeatSampler

    data = weighted.build_dataset(num_tasks=32, seed=7)
    generations = 4
    sampler = RepeatSampler(data, mini_repeat_count=generations, batch_size=8, repeat_count=1, shuffle=True, seed=7)
    played = Counter(data[index]["environment"] for index in sampler)
    assert played == {"echo": 8 * generations, "helpdesk": 24 * generations}


def test_weights_naming_another_env_or_all_zero_are_one_line(tmp_path):
    _project(tmp_path, 'name = "mix"\nenvs = ["echo", "helpdesk"]\nweights = { chess = 1 }')
    with pytest.raises(ConfigFileError, match=r"weights name \['chess'\], which are not among this mixture's envs"):
        load_config(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orlgen]\n[[tool.orlgen.mixtures]]\nname = "mix"\nenvs = ["echo", "helpdesk"]\nweights = { echo = 0 }\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigFileError, match="weights must be non-negative and not all zero"):
        load_config(tmp_path)
    for weight in ("nan", "inf"):  # TOML's own: the module would render `{'echo': inf}`, a NameError
        (tmp_path / "pyproject.toml").write_text(
            f'[tool.orlgen]\n[[tool.orlgen.mixtures]]\nname = "mix"\nenvs = ["echo", "helpdesk"]\nweights = {{ echo = {weight} }}\n',
            encoding="utf-8",
        )
        with pytest.raises(ConfigFileError, match=r"mixtures\.0\.weights\.echo: Input should be a finite number"):
            load_config(tmp_path)
