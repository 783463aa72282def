"""Trainer targets as plugins: the entry-point group `orlgen.trainers` (docs/plugins.md).

Two kinds of installation, both real to `importlib.metadata`:
- the example plugin (examples/orlgen-echo-trainer) installed by pip into a fresh venv that reads
  this one's site-packages (`tests/support/plugin_venv.py`, built once and cached), run through
  `python -m orlgen` there: render, header, lock, `check` owning its file;
- small plugins written in a temporary directory as pip lays them out (a package beside a
  `<name>-<version>.dist-info` holding `entry_points.txt`), put on this process's path, for the
  faults: a plugin that does not load, is not a Trainer, claims another name, or fails.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import EntryPoint, version
from pathlib import Path

import pytest
from orlgen import trainers
from orlgen.errors import OrlgenError
from orlgen.render import header, lock
from orlgen.render import jobs as render
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.plugin_venv import echo_plugin_bin

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "generated"

CONTEXT = "def context(plan):\n    return {'target': plan.target.value}\n"
TEMPLATE = "{{ imports }}\nTARGET = {{ target }}\n"


def _forget() -> None:
    """The registry reads entry points once per process; a test that installs one starts over."""
    for cached in (trainers._plugins, trainers._plugin, trainers.plugin_digest):
        cached.cache_clear()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on `sys.path` to install plugins into; forgotten again after the test."""
    directory = tmp_path / "site"
    directory.mkdir()
    monkeypatch.syspath_prepend(str(directory))
    _forget()
    yield directory
    for name in [module for module in sys.modules if module.startswith("plugin_")]:
        del sys.modules[name]
    _forget()


def install(
    site: Path,
    name: str,
    dist: str = "orlgen-demo",
    version: str = "1.0",
    *,
    trainer: str | None = None,
    body: str = CONTEXT,
    template: str = TEMPLATE,
) -> Path:
    """A plugin package `plugin_<name>` and its distribution's metadata, as pip writes them.
    `trainer` is the expression its TRAINER is (default: a well-formed Trainer named `name`)."""
    package = site / f"plugin_{name}"
    (package / "templates").mkdir(parents=True)
    (package / "templates" / f"{name}_module.py.jinja").write_text(template)
    made = (
        f"Trainer(name={name!r}, suffix=module_suffix({name!r}), written_for='demo>=1', "
        f"templates=Path(__file__).parent / 'templates', module_template='{name}_module.py.jinja', "
        "mixture_template=None, context=context, imports={})"
    )
    (package / "__init__.py").write_text(
        "from pathlib import Path\nfrom orlgen.trainers import Trainer, module_suffix\n\n"
        f"{body}\nTRAINER = {trainer or made}\n"
    )
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    points = info / "entry_points.txt"
    known = points.read_text() if points.exists() else "[orlgen.trainers]\n"
    points.write_text(f"{known}{name} = plugin_{name}:TRAINER\n")
    _forget()
    return package


# --------------------------------------------------------------------------------------------
# the built-in five: entry points like any plugin, found without them
# --------------------------------------------------------------------------------------------


def test_the_builtins_are_declared_as_entry_points_naming_their_own_trainer():
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][trainers.GROUP]
    assert tuple(declared) == trainers.TRAINER_NAMES
    for name, value in declared.items():
        assert EntryPoint(name, value, trainers.GROUP).load() is trainers.trainer(name)


def test_a_stale_install_without_entry_points_still_renders_the_builtins(monkeypatch: pytest.MonkeyPatch):
    """Fault injection: installed metadata that lists no entry point (an editable install not
    refreshed since the table was added). A built-in is orlgen's own module, found directly."""
    monkeypatch.setattr(trainers, "entry_points", lambda group: [])
    _forget()
    try:
        assert trainers.trainer_names() == trainers.TRAINER_NAMES
        assert all(trainers.trainer(name).name == name for name in trainers.TRAINER_NAMES)
    finally:
        monkeypatch.undo()
        _forget()


def test_another_distribution_cannot_replace_a_builtin(site: Path):
    install(site, "trl", dist="orlgen-impostor")
    assert trainers.trainer("trl").plugin is None and "plugin_trl" not in sys.modules
    assert trainers.trainer_names() == trainers.TRAINER_NAMES


# --------------------------------------------------------------------------------------------
# a plugin found, rendered, headed and keyed like a built-in
# --------------------------------------------------------------------------------------------


def test_a_plugin_renders_with_its_distribution_in_the_header_and_cache_inputs(site: Path):
    package = install(site, "demo", version="1.2")
    assert trainers.trainer_names() == (*trainers.TRAINER_NAMES, "demo")
    path, snapshot = GENERATED / "echo.snapshot.json", load(GENERATED / "echo.snapshot.json", rows=False)
    (job,) = render.jobs([(path, snapshot)], trainers={"echo": ["demo"]})
    assert job.path.name == "echo_demo.py" and job.inputs[:4] == ("module", "demo", "echo", snapshot.sha256)
    text = job.render()
    assert text.splitlines()[1].startswith("# For trainer demo (demo>=1) from plugin orlgen-demo 1.2; models by ")
    assert text.endswith('TARGET = "examples.echo:Echo"\n')
    written = header.parse(text.encode())
    assert written is not None and (written.trainer, written.plugin) == ("demo", "orlgen-demo 1.2")

    # the cache's inputs change with the plugin's template (an editable plugin keeps its version)
    (package / "templates" / "demo_module.py.jinja").write_text(TEMPLATE + "# changed\n")
    _forget()
    (again,) = render.jobs([(path, snapshot)], trainers={"echo": ["demo"]})
    assert again.inputs[:4] == job.inputs[:4] and again.inputs[4] != job.inputs[4]


def test_a_builtin_header_is_unchanged_and_round_trips():
    line = (GENERATED / "helpdesk_verifiers.py").read_text().splitlines()[1]
    parsed = header.parse((GENERATED / "helpdesk_verifiers.py").read_bytes())
    assert parsed is not None and parsed.plugin is None
    assert header.write(parsed).splitlines()[1] == line


def test_an_unknown_trainer_names_the_installed_plugins(site: Path, tmp_path: Path):
    install(site, "demo")
    (tmp_path / "pyproject.toml").write_text("[tool.orlgen]\ntrainers = ['dmeo']\n")
    result = invoke("check", tmp_path / "generated")
    assert result.exit_code == 2
    assert result.stderr == (
        f"orlgen: error: {tmp_path / 'pyproject.toml'}: [tool.orlgen] trainers.0: unknown trainer 'dmeo': "
        "expected one of trl, verifiers, skyrl, agent, verl, demo\n"
    )


# --------------------------------------------------------------------------------------------
# a broken plugin: one line naming its distribution
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "said"),
    [
        (dict(body="import not_installed_anywhere\n" + CONTEXT), "cannot be loaded: ModuleNotFoundError: "),
        (dict(trainer="'a string'"), "refused: it names a str, not an orlgen.trainers.Trainer"),
        (
            dict(trainer="Trainer('other', '_other', 'x', Path('.'), 'm', None, context, {})"),
            "refused: its Trainer says name='other', suffix='_other'; expected 'demo', '_demo'",
        ),
        (
            dict(trainer="Trainer('demo', '_demo', 'demo 1', Path('.'), 'm', None, context, {})"),
            "refused: written_for 'demo 1' is not one word",
        ),
        (
            dict(
                trainer="Trainer('demo', '_demo', 'demo', Path('.'), 'm', None, context, {}, "
                "(ExtraFile('/../../x.py', lambda plan, name: ''),))",
                body="from orlgen.trainers import ExtraFile\n" + CONTEXT,
            ),
            "refused: extra file suffix '/../../x.py' is not `_<name>.py` or `_<name>.yaml`",
        ),
    ],
    ids=["import-error", "not-a-trainer", "other-name", "written-for", "extra-file"],
)
def test_a_broken_plugin_is_one_line_naming_its_distribution(site: Path, how: dict[str, str], said: str):
    install(site, "demo", **how)
    with pytest.raises(OrlgenError) as caught:
        trainers.trainer("demo")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("trainer plugin 'demo' (orlgen-demo 1.0, plugin_demo:TRAINER): ") and said in message


def test_two_distributions_with_one_trainer_name_are_refused(site: Path):
    install(site, "demo", dist="orlgen-demo")
    info = site / "orlgen_other-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: orlgen-other\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text("[orlgen.trainers]\ndemo = plugin_demo:TRAINER\n")
    _forget()
    with pytest.raises(OrlgenError, match=r"^trainer 'demo' is declared by several installed distributions \("):
        trainers.trainer("demo")


def test_a_failing_context_is_one_line_naming_the_plugin(site: Path):
    install(site, "demo", body="def context(plan):\n    raise KeyError('tools')\n")
    path, snapshot = GENERATED / "echo.snapshot.json", load(GENERATED / "echo.snapshot.json", rows=False)
    (job,) = render.jobs([(path, snapshot)], trainers={"echo": ["demo"]})
    with pytest.raises(render.RenderError, match=r"^trainer plugin 'demo' \(orlgen-demo 1\.0\): its context failed: "):
        job.render()


def test_a_plugins_template_renders_in_the_sandbox(site: Path):
    install(site, "demo", template="{{ imports }}\nX = {{ ''.__class__.__mro__ }}\n")
    path, snapshot = GENERATED / "echo.snapshot.json", load(GENERATED / "echo.snapshot.json", rows=False)
    (job,) = render.jobs([(path, snapshot)], trainers={"echo": ["demo"]})
    with pytest.raises(OrlgenError, match=r"demo_module\.py\.jinja line 2: SecurityError: "):
        job.render()


# --------------------------------------------------------------------------------------------
# the example plugin, pip-installed in a fresh venv
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plugin_bin() -> Path:
    return echo_plugin_bin()


def run(program: Path, *args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`orlgen` or `python` of the plugin's venv, in a child process."""
    return subprocess.run([program, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.slow
def test_the_example_plugin_is_rendered_and_owned_by_check(plugin_bin: Path, tmp_path: Path):
    orlgen, python = plugin_bin / "orlgen", plugin_bin / "python"
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n\n[tool.orlgen]\ntrainers = ['echo']\n")
    out = tmp_path / "generated"
    out.mkdir()
    for name in ("echo.snapshot.json", "echo.tasks.jsonl"):
        shutil.copy(GENERATED / name, out)
    generated = run(orlgen, "generate", "--no-cache", cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr
    assert sorted(path.name for path in out.iterdir()) == [
        "echo.snapshot.json",
        "echo.tasks.jsonl",
        "echo_echo.py",
        "orlgen.lock",
    ]
    module = out / "echo_echo.py"
    assert module.read_text().splitlines()[1] == (
        "# For trainer echo (orlgen-echo-trainer>=0.1,<1) from plugin orlgen-echo-trainer 0.1.0; models by "
        f"datamodel-code-generator {version('datamodel-code-generator')}, formatted by black {version('black')}."
    )
    ran = run(python, "-c", "import runpy; print(runpy.run_path('generated/echo_echo.py')['TOOLS'])", cwd=tmp_path)
    assert ran.stdout == "{'echo': ('text',), 'hint': ()}\n", ran.stderr
    recorded = lock.read(out / lock.NAME)
    assert recorded is not None and recorded.plugins == {"echo": ("orlgen-echo-trainer", "0.1.0")}

    checked = run(orlgen, "check", "--no-cache", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (0, "generated files are current\n"), checked.stderr
    module.write_text(module.read_text().replace("'hint'", "'hints'").replace('"hint"', '"hints"'))
    checked = run(orlgen, "check", "--no-cache", cwd=tmp_path)
    assert checked.returncode == 1 and f"{Path('generated') / 'echo_echo.py'}: hand-edited" in checked.stdout

    # the lock records another version of the plugin: one line, what to install
    text = (out / lock.NAME).read_text()
    (out / lock.NAME).write_text(text.replace('version = "0.1.0"', 'version = "0.0.9"'))
    checked = run(orlgen, "check", "--no-cache", cwd=tmp_path)
    assert checked.returncode == 2 and checked.stdout == ""
    (line,) = checked.stderr.splitlines()
    assert (
        "generated with trainer plugin echo (orlgen-echo-trainer 0.0.9); installed here: orlgen-echo-trainer 0.1.0"
        in line
    )
    assert "pip install 'orlgen-echo-trainer==0.0.9'" in line

    # without the plugin (this venv), the config's trainer is unknown: one line, what to install
    result = invoke("check", out)
    assert result.exit_code == 2 and result.stderr.endswith(
        "unknown trainer 'echo': expected one of trl, verifiers, skyrl, agent, verl; "
        "orlgen.lock records it as a plugin: pip install 'orlgen-echo-trainer==0.0.9'\n"
    )


def test_another_plugin_version_in_a_header_reads_as_stale():
    """`check` words a file rendered by another version of the plugin (its header says so)."""
    from orlgen.review.check import cause

    made = header.current("echo.snapshot.json", "0" * 64, "demo", "demo>=1", "orlgen-demo 1.0")
    then, now = (header.write(made).encode() + b"X = 1\n", header.write(made).encode() + b"X = 2\n")
    newer = header.write(header.current("echo.snapshot.json", "0" * 64, "demo", "demo>=1", "orlgen-demo 1.2"))
    assert cause(then, newer.encode() + b"X = 2\n") == (
        "stale: the header names plugin orlgen-demo 1.0 for trainer demo; this is plugin orlgen-demo 1.2"
    )
    assert cause(then, now).startswith("hand-edited")
