"""Trainers in the generator: one neutral plan, one module per (env, trainer), each named by its
trainer's suffix, headed by its trainer, keyed in the cache by it, and owned by `check`.

The verifiers and skyrl trainers are built by other work; where a second trainer is needed, a
stand-in registered under the name `verifiers` renders a trivial template over the real plan
(`tests/support/stand_in_trainer.py`: a fake for the registry's lazy import only).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from orlgen.errors import OrlgenError, RefusedWrite
from orlgen.project import Project
from orlgen.render import header
from orlgen.render import jobs as render
from orlgen.review.cache import Verdicts
from orlgen.snapshot.model import Snapshot, Target, load
from orlgen.trainers import TRAINER_NAMES, Trainer, trainer

from tests.support.cli import invoke
from tests.support.stand_in_trainer import install

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "generated"


@pytest.fixture
def verifiers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Trainer:
    return install(monkeypatch, "verifiers", tmp_path / "stand_in")


def echo(directory: Path = GENERATED) -> tuple[Path, Snapshot]:
    return directory / "echo.snapshot.json", load(GENERATED / "echo.snapshot.json", rows=False)


def project(tmp_path: Path, table: str) -> Path:
    """A project whose output directory holds the checked-in echo snapshot and TRL module."""
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n{table}\n")
    out = tmp_path / "generated"
    out.mkdir()
    for name in ("echo.snapshot.json", "echo.tasks.jsonl", "echo.py"):
        shutil.copy(GENERATED / name, out)
    return out


def test_an_unknown_trainer_is_one_line_naming_the_valid_ones():
    with pytest.raises(
        OrlgenError, match=r"^unknown trainer 'trlx': expected one of trl, verifiers, skyrl, agent, verl$"
    ):
        trainer("trlx")


def test_the_trl_trainer_is_todays_module():
    trl = trainer("trl")
    assert (trl.name, trl.suffix, trl.module_template, trl.mixture_template) == (
        "trl",
        "",
        "module.py.jinja",
        "mixture.py.jinja",
    )
    assert trl.module_name("helpdesk") == "helpdesk" and (trl.templates / trl.module_template).is_file()
    assert TRAINER_NAMES == ("trl", "verifiers", "skyrl", "agent", "verl")


@pytest.mark.slow
def test_each_trainer_has_its_file_its_header_and_its_cache_inputs(verifiers: Trainer):
    path, snapshot = echo()
    found = render.jobs([(path, snapshot)], trainers={"echo": ["trl", "verifiers"]})
    assert [(job.path.name, job.inputs) for job in found] == [
        ("echo.py", ("module", "trl", "echo", snapshot.sha256, "_models")),
        ("echo_verifiers.py", ("module", "verifiers", "echo", snapshot.sha256, "_models")),
        ("echo_models.py", ("module", "models", "echo", snapshot.sha256)),
    ]
    written = header.parse(found[1].render().encode())
    assert written is not None and (written.trainer, written.written_for) == ("verifiers", "verifiers==0.4.0")
    assert render.jobs([(path, snapshot)])[0].path.name == "echo.py"  # no trainers named: TRL's


def test_a_verdict_holds_for_its_trainer_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    verdicts = Verdicts.for_project(tmp_path / "project", None)
    assert verdicts is not None
    path, snapshot = echo()
    (trl,) = render.jobs([(path, snapshot)], trainers={"echo": ["trl"]})
    data = (GENERATED / "echo.py").read_bytes()
    verdicts.remember(trl, data)
    other = render.Job(trl.path, ("module", "verifiers", *trl.inputs[2:]), trl.render)
    assert verdicts.current(trl, data) and not verdicts.current(other, data)


def test_two_modules_on_one_path_are_refused_naming_both(verifiers: Trainer):
    path, snapshot = echo()
    twin = snapshot.model_copy(update={"name": "echo_verifiers"})
    with pytest.raises(RefusedWrite, match=r"both the verifiers module of echo and the trl module of echo_verifiers"):
        render.jobs(
            [(path, snapshot), (path.with_name("echo_verifiers.snapshot.json"), twin)],
            trainers={"echo": ["trl", "verifiers"]},
        )


def test_a_mixture_renders_for_the_trainers_that_render_mixtures(verifiers: Trainer):
    helpdesk = load(GENERATED / "helpdesk.snapshot.json", rows=False)
    both = {"echo": ["trl", "verifiers"], "helpdesk": ["trl", "verifiers"]}
    members = [echo(), (GENERATED / "helpdesk.snapshot.json", helpdesk)]
    found = render.jobs(members, mixtures={"mix": ["echo", "helpdesk"]}, trainers=both)
    assert [job.path.name for job in found if job.inputs[0] == "mixture"] == ["mix.py"]  # the stand-in has none
    found = render.jobs(members, mixtures={"mix": ["echo", "helpdesk"]}, trainers={**both, "helpdesk": ["verifiers"]})
    assert [job for job in found if job.inputs[0] == "mixture"] == []  # TRL's needs every member's TRL module


def test_an_env_entry_gives_its_snapshot_its_trainers(tmp_path: Path):
    out = project(
        tmp_path,
        "[tool.orlgen]\ntrainers = ['skyrl']\n\n"
        "[[tool.orlgen.envs]]\ntarget = 'examples.echo:Echo'\ntrainers = ['trl', 'verifiers']\n\n"
        "[[tool.orlgen.envs]]\ntarget = 'http://127.0.0.1:9'\nname = 'other'\n",
    )
    found = Project.find([out])
    path, snapshot = echo(out)
    assert found.trainers({path: snapshot}) == {"echo": ("trl", "verifiers")}
    served = Target(kind="url", value="http://127.0.0.1:9", env="echo")
    other = snapshot.model_copy(update={"name": "other", "target": served})
    assert found.trainers({path: other}) == {"other": ("skyrl",)}  # matched by name; the config's default
    assert found.trainers({path: other.model_copy(update={"name": "third"})}) == {"third": ("skyrl",)}


@pytest.mark.slow
def test_check_owns_every_configured_trainers_module(tmp_path: Path, verifiers: Trainer):
    out = project(tmp_path, "[tool.orlgen]\ntrainers = ['trl', 'verifiers']\n")
    assert invoke("generate", "--no-cache", out).exit_code == 0
    module = out / "echo_verifiers.py"
    assert invoke("check", "--no-cache", out).stdout == "generated files are current\n"
    module.write_text(module.read_text().replace('ENV_CLASS = "EchoEnv"', 'ENV_CLASS = "Other"'))
    checked = invoke("check", "--no-cache", out)
    assert checked.exit_code == 1 and f"{module}: hand-edited" in checked.stdout
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.orlgen]\ntrainers = ['trl']\n")
    checked = invoke("check", "--no-cache", out)
    assert checked.exit_code == 1
    assert f"{module}: orphaned: the verifiers module of echo, a trainer pyproject.toml does not list for it" in (
        checked.stdout
    )
    assert f"{out / 'echo.py'}: stale: the env's trainers changed" in checked.stdout  # its models move back in
    assert f"removed {module}" in invoke("generate", "--no-cache", out).stdout and not module.exists()


@pytest.mark.slow
def test_generate_trainer_is_a_one_off_that_leaves_the_configured_modules(tmp_path: Path, verifiers: Trainer):
    out = project(tmp_path, "")
    before = (out / "echo.py").stat().st_mtime_ns
    result = invoke("generate", "--no-cache", "--trainer", "verifiers", out)
    assert result.exit_code == 0 and f"wrote {out / 'echo_verifiers.py'}" in result.stdout
    assert (out / "echo.py").stat().st_mtime_ns == before and f"{out / 'echo.py'}\n" not in result.stdout
    assert "orphaned: the verifiers module of echo" in invoke("check", "--no-cache", out).stdout


@pytest.mark.slow
def test_a_capture_renders_its_env_entrys_trainers(tmp_path: Path, verifiers: Trainer, echo_url: str):
    """`snapshot` (and so `sync`) renders the modules of the trainers the env's entry lists,
    the entry found by the target the capture records (a URL, against a real server)."""
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'p'\n\n[[tool.orlgen.envs]]\ntarget = '{echo_url}'\ntrainers = ['verifiers']\n"
    )
    out = tmp_path / "generated"
    result = invoke("snapshot", echo_url, "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in out.iterdir()) == [
        "echo.snapshot.json",
        "echo.tasks.jsonl",
        "echo_verifiers.py",
        "orlgen.lock",
    ]
    assert invoke("check", "--no-cache", out).stdout == "generated files are current\n"
