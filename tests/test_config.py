"""[tool.orlgen] config, `orlgen sync`, `snapshot --check`, and template overrides."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from orlgen.config import load_config
from orlgen.errors import ConfigFileError
from orlgen.review.files import write_files
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import REPO


def write_project(path, table: str) -> None:
    (path / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n{table}\n")


def test_defaults_without_a_table(tmp_path):
    write_project(tmp_path, "")
    config = load_config(tmp_path)
    assert config.out == tmp_path / "generated" and config.templates is None and config.envs == ()


def test_reading_the_config_loads_no_capture_code():
    # config builds CaptureOptions for `sync`, yet the server-facing capture module (and the SDK
    # it drives) stays unloaded until something captures.
    code = (
        "import sys, orlgen.config; "
        "c = orlgen.config.EnvConfig(target='a:B').capture_options(); "
        "print(type(c).__name__, 'orlgen.capture.live' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["CaptureOptions", "False"]


def test_unknown_keys_are_errors(tmp_path):
    write_project(tmp_path, "[tool.orlgen]\nout = 'gen'\noutput = 'typo'\n")
    with pytest.raises(ConfigFileError, match=r"\[tool.orlgen\] output: unknown key \(did you mean `out`\?\)$"):
        load_config(tmp_path)
    write_project(tmp_path, "[[tool.orlgen.envs]]\ntarget = 'a:B'\nsplit = 'train'\n")
    with pytest.raises(ConfigFileError, match=r"envs.0.split: unknown key \(did you mean `splits`\?\)$"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("probs = 2", "envs.0.probs: unknown key (did you mean `probes`?)"),
        (
            "xyzzy = 1",
            "envs.0.xyzzy: unknown key (known keys: target, name, env, splits, tasks, probes, reward, unfinished_reward, reward_clamp, toolset, secrets, trainers)",
        ),
    ],
)
def test_an_unknown_env_key_names_the_key_it_is_close_to(tmp_path, line, message):
    write_project(tmp_path, f"[[tool.orlgen.envs]]\ntarget = 'a:B'\n{line}\n")
    with pytest.raises(ConfigFileError) as caught:
        load_config(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'pyproject.toml'}: [tool.orlgen] {message}"


@pytest.mark.parametrize("value", ["'some'", "-3", "true", "2.5"])
def test_a_wrong_tasks_value_names_all_three_forms(tmp_path, value):
    write_project(tmp_path, f"[[tool.orlgen.envs]]\ntarget = 'a:B'\ntasks = {value}\n")
    with pytest.raises(ConfigFileError, match=r'envs.0.tasks: expected "all", "none" or a number N >= 0 \(a sample'):
        load_config(tmp_path)


def test_probes_must_be_a_whole_number(tmp_path):
    write_project(tmp_path, "[[tool.orlgen.envs]]\ntarget = 'a:B'\nprobes = true\n")
    with pytest.raises(ConfigFileError, match=r"envs.0.probes: Input should be a valid integer"):
        load_config(tmp_path)


def test_the_same_env_listed_twice_is_refused(tmp_path):
    envs = "".join(f"[[tool.orlgen.envs]]\ntarget = {target!r}\n" for target in ["a:B", "c:D", "a:B"])
    write_project(tmp_path, envs)
    with pytest.raises(ConfigFileError, match=r"\] envs.2: target 'a:B' is listed twice \(also envs.0\)"):
        load_config(tmp_path)
    # one server hosting two envs is two entries, told apart by `env`
    write_project(tmp_path, "".join(f"[[tool.orlgen.envs]]\ntarget = 'http://h:1'\nenv = {e!r}\n" for e in "ab"))
    assert [env.env for env in load_config(tmp_path).envs] == ["a", "b"]


def test_cli_reports_a_bad_config_in_one_line(tmp_path, monkeypatch):
    write_project(tmp_path, "[tool.orlgen]\nbogus = 1\n")
    monkeypatch.chdir(tmp_path)
    result = invoke("check")
    assert result.exit_code == 2
    assert result.stderr.startswith("orlgen: error: pyproject.toml: [tool.orlgen] bogus")


@pytest.mark.slow
def test_sync_snapshots_and_generates_every_listed_env(tmp_path, monkeypatch, echo_url):
    write_project(
        tmp_path,
        f"[tool.orlgen]\nout = 'gen'\n\n[[tool.orlgen.envs]]\ntarget = '{echo_url}'\nname = 'echo_live'\n"
        "probes = 2\n\n[[tool.orlgen.envs]]\ntarget = 'tests.support.envs.recording:Recording'\ntasks = 'none'\n",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(REPO))
    assert invoke("sync").exit_code == 0
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == [
        "echo_live.py",
        "echo_live.snapshot.json",
        "echo_live.tasks.jsonl",
        "orlgen.lock",  # the versions that generated them
        "recording.py",
        "recording.snapshot.json",  # --tasks none: no tasks file
    ]
    assert load(tmp_path / "gen" / "recording.snapshot.json").tasks["train"].coverage == "none"
    assert len(load(tmp_path / "gen" / "echo_live.snapshot.json").probed_tasks) == 2
    assert invoke("check").exit_code == 0  # `check` with no argument uses `out`


@pytest.mark.slow
def test_snapshot_check_reports_live_drift(tmp_path, echo_url):
    out = str(tmp_path)
    assert invoke("snapshot", echo_url, "--out", out).exit_code == 0
    same = invoke("snapshot", echo_url, "--out", out, "--check")
    assert same.exit_code == 0 and "matches the snapshot" in same.stdout
    path = tmp_path / "echo.snapshot.json"
    snapshot = load(path)
    edited = snapshot.model_copy(update={"tools": [t for t in snapshot.tools if t.name != "hint"]})
    write_files(edited.canonical().files(path))
    before = path.read_bytes()
    drift = invoke("snapshot", echo_url, "--out", out, "--check")
    assert drift.exit_code == 1 and drift.stdout.startswith("TOOL_ADDED")
    assert path.read_bytes() == before  # --check writes nothing


def test_snapshot_check_and_snapshot_find_the_module_by_one_rule(tmp_path, echo_url):
    """Another URL of the same server (`localhost` for `127.0.0.1`): a plain capture updates
    the env's module, and `--check` compares with that same module."""
    out = str(tmp_path)
    assert invoke("snapshot", echo_url, "--out", out).exit_code == 0
    other = echo_url.replace("127.0.0.1", "localhost")
    check = invoke("snapshot", other, "--out", out, "--check")
    assert check.exit_code == 0, check.output
    assert check.stdout == f"{tmp_path / 'echo.snapshot.json'}: the live environment matches the snapshot\n"
    again = invoke("snapshot", other, "--out", out)
    assert again.exit_code == 0, again.output
    assert sorted(path.name for path in tmp_path.glob("*.snapshot.json")) == ["echo.snapshot.json"]
    empty = invoke("snapshot", other, "--out", str(tmp_path / "empty"), "--check")
    assert empty.exit_code == 2
    assert "no checked-in snapshot of env 'echo' (" in empty.stderr


def test_snapshot_check_compares_the_stored_task_values(tmp_path, echo_url):
    """Same tools, splits, counts and task schema: a stored task whose value the env no longer
    serves is drift, reported as a DATA change."""
    out = str(tmp_path)
    assert invoke("snapshot", echo_url, "--out", out).exit_code == 0
    path = tmp_path / "echo.snapshot.json"
    snapshot = load(path)
    train = snapshot.tasks["train"]
    task = train.tasks[2]
    spec = {key: f"{value}!" if isinstance(value, str) else value for key, value in task.spec.items()}
    assert spec != task.spec, "the echo task has a string field to edit"
    tasks = [*train.tasks[:2], task.model_copy(update={"spec": spec}), *train.tasks[3:]]
    edited = snapshot.model_copy(
        update={"tasks": {**snapshot.tasks, "train": train.model_copy(update={"tasks": tasks})}}
    )
    write_files(edited.canonical().files(path))
    drift = invoke("snapshot", echo_url, "--out", out, "--check")
    assert drift.exit_code == 1, drift.output
    assert drift.stdout.split() == [
        "TASKS_CHANGED",
        "DATA",
        "train:",
        "1",
        "of",
        "8",
        "stored",
        "tasks",
        "changed",
        "(first:",
        "train[2])",
    ]
    assert "the live environment drifted (1 change(s))" in drift.stderr


@pytest.mark.slow
def test_a_project_template_overrides_one_packaged_template(tmp_path, monkeypatch):
    shutil.copytree(REPO / "generated", tmp_path / "generated")
    (tmp_path / "templates").mkdir()
    method = (REPO / "templates" / "tool_method.py.jinja").read_text()
    (tmp_path / "templates" / "tool_method.py.jinja").write_text(
        method.replace(
            "        {{ tool.docstring }}\n", "        {{ tool.docstring }}\n        # reviewed tool {{ tool.wire }}\n"
        )
    )
    write_project(tmp_path, "[tool.orlgen]\ntemplates = 'templates'\n")
    monkeypatch.chdir(tmp_path)
    stale = invoke("check")
    assert stale.exit_code == 1 and "rendered with other templates" in stale.stdout
    assert invoke("generate").exit_code == 0
    text = (tmp_path / "generated" / "echo.py").read_text()
    assert "        # reviewed tool 'echo'\n" in text and "# reviewed tool 'hint'" in text
    assert "class EchoEnv(EnvAdapter, spec=SPEC):" in text  # the rest still comes from the packaged module template
    assert invoke("check").exit_code == 0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[tool.orlgen]\ntrainers = ['trl', 'verifier']", "trainers.1: unknown trainer 'verifier': expected one of "),
        (
            "[tool.orlgen]\ntrainers = []",
            "trainers: name at least one trainer (one of trl, verifiers, skyrl, agent, verl)",
        ),
        ("[tool.orlgen]\ntrainers = ['trl', 'trl']", "trainers: trainer 'trl' is listed twice: list each once"),
        ("[tool.orlgen]\ntrainers = 'trl'", "trainers: expected a list of trainer names, e.g. ['trl']"),
        ("[[tool.orlgen.envs]]\ntarget = 'a:B'\ntrainers = ['TRL']", "envs.0.trainers.0: unknown trainer 'TRL': "),
    ],
)
def test_a_wrong_trainers_list_is_one_line(tmp_path, table, message):
    write_project(tmp_path, table)
    with pytest.raises(ConfigFileError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path / 'pyproject.toml'}: [tool.orlgen] {message}")
    assert "\n" not in str(caught.value)
    result = invoke("generate", tmp_path / "generated")
    assert result.exit_code == 2 and result.stderr.startswith("orlgen: error: ") and result.stderr.count("\n") == 1


def test_trainers_default_to_trl_and_an_env_may_list_its_own(tmp_path):
    write_project(tmp_path, "[[tool.orlgen.envs]]\ntarget = 'a:B'\n")
    assert load_config(tmp_path).trainers == ("trl",) and load_config(tmp_path).envs[0].trainers is None
    write_project(
        tmp_path,
        "[tool.orlgen]\ntrainers = ['trl', 'skyrl']\n\n[[tool.orlgen.envs]]\ntarget = 'a:B'\ntrainers = ['verifiers']\n",
    )
    config = load_config(tmp_path)
    assert (config.trainers, config.envs[0].trainers) == (("trl", "skyrl"), ("verifiers",))
