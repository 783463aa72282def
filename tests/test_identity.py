"""One module per environment in a directory, whatever the target form (`orlgen.review.identity`), and
the exact re-capture command (`orlgen.snapshot.recorded`)."""

from __future__ import annotations

import pytest
from orlgen.snapshot.model import load
from orlgen.snapshot.recorded import command

from tests.support.cli import invoke


def snapshot_cli(*args: str):
    return invoke("snapshot", *args)


def test_module_and_url_captures_of_one_env_share_one_module(tmp_path, echo_url):
    out = str(tmp_path)
    assert snapshot_cli(echo_url, "--out", out, "--no-generate").exit_code == 0
    by_url = load(tmp_path / "echo.snapshot.json")
    assert snapshot_cli("examples.echo:Echo", "--out", out, "--no-generate").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "echo.snapshot.json",
        "echo.tasks.jsonl",
    ]  # replaced, not a second one
    by_module = load(tmp_path / "echo.snapshot.json")
    assert (by_url.name, by_module.name) == ("echo", "echo")
    assert (by_url.target.kind, by_module.target.kind) == ("url", "module")


def test_the_name_an_env_has_in_the_directory_is_kept(tmp_path, echo_url):
    """Named once (`--name`), an env keeps that name when captured again in another form."""
    out = str(tmp_path)
    assert snapshot_cli("examples.echo:Echo", "--name", "echo_desk", "--out", out, "--no-generate").exit_code == 0
    assert snapshot_cli(echo_url, "--out", out, "--no-generate").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["echo_desk.snapshot.json", "echo_desk.tasks.jsonl"]
    assert load(tmp_path / "echo_desk.snapshot.json").target.kind == "url"


def test_a_second_module_for_an_env_is_refused_in_one_line(tmp_path, echo_url):
    out = str(tmp_path)
    assert snapshot_cli("examples.echo:Echo", "--out", out, "--no-generate").exit_code == 0
    refused = snapshot_cli(echo_url, "--name", "echo_again", "--out", out)
    assert refused.exit_code == 2
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"orlgen: error: {tmp_path / 'echo.snapshot.json'}: env 'echo' already has")
    assert "a second one (echo_again.py) is refused: capture it as echo (drop --name)" in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["echo.snapshot.json", "echo.tasks.jsonl"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, expected",
    [
        ([], "orlgen snapshot examples.echo:Echo"),
        (
            ["--tasks", "3", "--probes", "1", "--name", "words"],
            "orlgen snapshot examples.echo:Echo --name words --tasks 3 --probes 1",
        ),
        (["--tasks", "none"], "orlgen snapshot examples.echo:Echo --tasks none"),
    ],
)
def test_the_recapture_command_repeats_the_capture(tmp_path, args, expected):
    assert snapshot_cli("examples.echo:Echo", "--out", str(tmp_path), *args).exit_code == 0
    (path,) = tmp_path.glob("*.snapshot.json")
    assert command(load(path)) == expected
    assert f"re-capture with `{expected}`." in path.with_name(path.name.replace(".snapshot.json", ".py")).read_text()
