"""The `orlgen check` contract, through the real command on a copy of `generated/`.

Exit 0: every generated file is current. Exit 1: something is missing, stale, hand-edited or
orphaned, or a snapshot is invalid or not canonical; stdout names each file with its cause and a
unified diff. Exit 2: a usage or runtime error, as one `orlgen: error:` line on stderr. `orlgen
generate` repairs drift. The attacker's side (tampering, writes) is in test_security_files.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from orlgen.review.files import write_files
from orlgen.snapshot import model as snapshot

from tests.support.cli import invoke, run_orlgen

REPO = Path(__file__).resolve().parent.parent
GENERATED = REPO / "generated"
OLD = 946_684_800  # 2000-01-01, an mtime no write can keep


class Result(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def orlgen_process(*args: str | Path, cwd: Path = REPO) -> Result:
    """The installed command in a child process: real exit code, real stdout and stderr."""
    done = run_orlgen(*args, cwd=cwd, timeout=120)
    return Result(done.returncode, done.stdout, done.stderr)


def orlgen(*args: str | Path) -> Result:
    """The same command run in this process by click's runner (no interpreter start-up per call)."""
    done = invoke(*args)
    return Result(done.exit_code, done.stdout, done.stderr)


@pytest.fixture
def gen(tmp_path: Path) -> Path:
    """A private copy of the checked-in `generated/` directory."""
    return Path(shutil.copytree(GENERATED, tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__")))


def hand_edit(module: Path) -> None:
    text = module.read_text()
    assert "        return self._call_tool(" in text
    module.write_text(
        text.replace("        return self._call_tool(", "        print('debug')\n        return self._call_tool(", 1)
    )


def change_snapshot(path: Path, description: str = "Echo a text back, reworded upstream.") -> None:
    """What a re-capture after an upstream change does: new content, new hash, canonical JSON."""
    old = snapshot.load(path)
    tools = [
        t.model_copy(update={"description": description}) if t.name in ("echo", "get_order") else t for t in old.tools
    ]
    write_files(old.model_copy(update={"tools": tools}).canonical().files(path))


def problems(stdout: str) -> dict[str, str]:
    """`path: cause` lines of check's report, keyed by file name."""
    found = {}
    for line in stdout.splitlines():
        head, sep, cause = line.partition(": ")
        if sep and head.endswith((".py", ".yaml")) and not line.startswith(("---", "+++", "-", "+", " ")):
            found[Path(head).name] = cause
    return found


def assert_one_error_line(result: Result, *fragments: str) -> None:
    assert result.returncode == 2, result
    assert result.stderr.startswith("orlgen: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


# --------------------------------------------------------------------------------------------
# current
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_checked_in_generated_files_are_current():
    """Keeps the repository honest: regenerate (`orlgen generate`) and commit when this fails."""
    result = orlgen_process("check")  # the default: generated/ under the working directory
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "generated files are current\n"
    assert result.stderr == ""


def test_a_fresh_copy_is_current(gen: Path):
    result = orlgen("check", gen)
    assert (result.returncode, result.stdout) == (0, "generated files are current\n")


def test_files_that_cannot_change_an_import_are_left_alone(gen: Path):
    """A README, data or Python's own timestamp-checked cache beside the modules are fine; what
    could change an import is the security suite's (test_security_files.py)."""
    (gen / "README.md").write_text("# Generated adapters\n")
    (gen / "notes.json").write_text("{}\n")
    (gen / "data-files").mkdir()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(gen)], check=True)
    assert list((gen / "__pycache__").glob("*.pyc"))
    result = orlgen("check", gen)
    assert (result.returncode, result.stdout) == (0, "generated files are current\n")


# --------------------------------------------------------------------------------------------
# drift: exit 1, the file, the cause, a diff
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_hand_edited_module(gen: Path):
    module = gen / "echo.py"
    hand_edit(module)
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert list(problems(result.stdout)) == ["echo.py"]
    assert result.stdout.startswith(f"{module}: hand-edited")
    assert f"--- {module} (on disk)\n+++ {module} (generated)\n" in result.stdout
    assert "\n-        print('debug')\n" in result.stdout
    assert "@@ " in result.stdout
    assert "1 generated file(s) out of date" in result.stderr


def test_stale_module_after_the_snapshot_changed(gen: Path):
    change_snapshot(gen / "echo.snapshot.json")
    result = orlgen("check", gen)
    assert result.returncode == 1
    # support_mix.py mixes echo and helpdesk ([tool.orlgen] mixtures): it is stale with echo.
    assert list(problems(result.stdout)) == ["echo.py", "support_mix.py"]
    assert problems(result.stdout)["echo.py"].startswith("stale: the snapshot changed")
    assert problems(result.stdout)["support_mix.py"].startswith("stale: the snapshot changed")
    assert "reworded upstream" in result.stdout
    new_hash = snapshot.load(gen / "echo.snapshot.json").sha256
    assert any(
        line.startswith("+# Code generated by orlgen") and new_hash in line for line in result.stdout.splitlines()
    )


@pytest.mark.slow
def test_missing_module(gen: Path):
    (gen / "helpdesk.py").unlink()
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert list(problems(result.stdout)) == ["helpdesk.py"]
    assert problems(result.stdout)["helpdesk.py"].startswith("missing")
    assert result.stdout.splitlines() == [f"{gen / 'helpdesk.py'}: missing: run `orlgen generate`"]  # not the module


@pytest.mark.slow
def test_a_foreign_file_is_to_be_moved_out_before_generate(gen: Path):
    """`generate` refuses to write beside a file orlgen did not write, so check's summary must not
    send the user there first: it names the move, then `generate` for what else is out of date."""
    (gen / "notes.py").write_text("print('mine')\n")
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert problems(result.stdout)["notes.py"].startswith("a Python file orlgen does not write")
    assert result.stderr.startswith("1 file(s) orlgen did not write: move them out of the output directory")
    assert "out of date" not in result.stderr
    assert orlgen("generate", gen).returncode == 2  # the advice main gave, which fails
    hand_edit(gen / "echo.py")
    summary = orlgen("check", gen).stderr
    assert summary.index("move them out") < summary.index("then 1 generated file(s) out of date: run `orlgen generate`")
    (gen / "notes.py").rename(gen.parent / "notes.py")
    assert orlgen("generate", gen).returncode == 0
    assert orlgen("check", gen).returncode == 0


def test_orphaned_module(gen: Path):
    (gen / "echo.snapshot.json").unlink()
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert list(problems(result.stdout)) == ["echo.py", "support_mix.py"]  # the mixture lost a member
    assert problems(result.stdout)["echo.py"].startswith("orphaned")
    # not the config's output directory, so not its mixture: an orphan, as generate says (it removes
    # it); in the output directory, both say the mixture misses a member (test_security_repo.py)
    assert problems(result.stdout)["support_mix.py"].startswith("orphaned")


@pytest.mark.slow
def test_every_problem_is_reported_in_one_run(gen: Path):
    hand_edit(gen / "echo.py")
    change_snapshot(gen / "helpdesk.snapshot.json")
    (gen / "other.py").write_bytes((GENERATED / "echo.py").read_bytes())  # no other.snapshot.json
    result = orlgen("check", gen)
    assert result.returncode == 1
    causes = problems(result.stdout)
    helpdesk = [
        "helpdesk.py",
        "helpdesk_agent.py",
        "helpdesk_models.py",
        "helpdesk_skyrl.py",
        "helpdesk_verifiers.py",
        "helpdesk_verl.py",
        "helpdesk_verl_tools.yaml",
    ]
    assert sorted(causes) == ["echo.py", *helpdesk, "other.py", "support_mix.py"]
    assert causes["echo.py"].startswith("hand-edited")
    assert all(causes[name].startswith("stale: the snapshot changed") for name in helpdesk)
    assert causes["other.py"].startswith("orphaned")
    assert "10 generated file(s) out of date" in result.stderr


@pytest.mark.slow
def test_a_snapshot_with_its_hash_intact_but_other_bytes_is_not_canonical(gen: Path):
    """Same content, other bytes (keys reordered, one line): a reviewer reads bytes, so check
    reports them with a diff, and generate rewrites the canonical form."""
    path = gen / "echo.snapshot.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps(dict(reversed(list(data.items())))), encoding="utf-8")
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{path}: not canonical: its content matches its sha256"), result.stdout
    assert f"+++ {path} (generated)" in result.stdout
    assert orlgen("generate", gen).returncode == 0
    assert path.read_bytes() == (GENERATED / "echo.snapshot.json").read_bytes()
    assert orlgen("check", gen).returncode == 0


def test_check_of_one_snapshot_file_looks_at_its_module_only(gen: Path):
    hand_edit(gen / "helpdesk.py")
    assert orlgen("check", gen / "echo.snapshot.json").returncode == 0
    result = orlgen("check", gen / "helpdesk.snapshot.json")
    assert result.returncode == 1 and list(problems(result.stdout)) == ["helpdesk.py"]


# --------------------------------------------------------------------------------------------
# errors: exit 2, one line
# --------------------------------------------------------------------------------------------


# A snapshot that cannot be read is a finding of `check` (exit 1, named with its cause, the other
# files still checked), since a PR author controls it; a path that does not exist is usage (exit 2).


def snapshot_problem(result: Result, path: Path) -> str:
    assert result.returncode == 1, result
    lines = [line for line in result.stdout.splitlines() if line.startswith(f"{path}: ")]
    assert len(lines) == 1, result.stdout
    return lines[0].removeprefix(f"{path}: ")


def test_corrupted_snapshot_is_a_finding_naming_the_file(gen: Path):
    path = gen / "helpdesk.snapshot.json"
    path.write_text(path.read_text()[:500])  # truncated
    result = orlgen_process("check", gen)
    assert snapshot_problem(result, path).startswith("invalid snapshot: not valid JSON")
    assert "helpdesk.py" not in problems(result.stdout)  # not called an orphan: its snapshot is there
    assert result.stderr.startswith("1 snapshot(s) invalid: re-capture with `orlgen snapshot`")
    assert "orlgen generate" not in result.stderr  # which cannot mend a snapshot


def test_hand_edited_snapshot_is_a_finding_naming_the_file(gen: Path):
    path = gen / "echo.snapshot.json"
    path.write_text(path.read_text().replace('"num_tasks": 8', '"num_tasks": 9'))
    hand_edit(gen / "helpdesk.py")
    result = orlgen("check", gen)
    assert "sha256 does not match" in snapshot_problem(result, path)
    assert problems(result.stdout)["helpdesk.py"].startswith("hand-edited")  # the others are still checked


def test_a_tampered_tasks_file_is_a_finding_naming_it(gen: Path):
    tasks = gen / "echo.tasks.jsonl"
    tasks.write_text(tasks.read_text().replace('"target": "hello"', '"target": "hullo"'))
    result = orlgen("check", gen)
    cause = snapshot_problem(result, gen / "echo.snapshot.json")
    assert cause == (
        f"invalid snapshot: {tasks}: sha256 does not match the one echo.snapshot.json records (edited by "
        "hand?); re-capture with `orlgen snapshot`, or restore both files from version control"
    )
    assert "echo.py" not in problems(result.stdout)  # not an orphan: its snapshot is there
    assert result.stderr.startswith("1 snapshot(s) invalid")


def test_a_tasks_file_no_snapshot_records_is_an_orphan_generate_removes(gen: Path):
    stray = gen / "gone.tasks.jsonl"
    stray.write_bytes((gen / "echo.tasks.jsonl").read_bytes())
    result = orlgen("check", gen)
    assert result.returncode == 1 and f"{stray}: orphaned" in result.stdout
    assert orlgen("generate", gen).returncode == 0 and not stray.exists()


def test_a_format_1_snapshot_is_named_and_generate_migrates_it(gen: Path):
    """What orlgen wrote before the split (one file, tasks inline, the whole sealed) is read:
    `check` says to run `orlgen generate`, which writes both files and the module again."""
    path = gen / "echo.snapshot.json"
    current = snapshot.load(path)
    body = current.ordered().model_copy(update={"format_version": 1}).model_dump(exclude={"sha256"})
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    body["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    path.write_text(json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    (gen / "echo.tasks.jsonl").unlink()
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert f"{path}: format 1 (its tasks inline): run `orlgen generate`" in result.stdout
    assert f"{gen / 'echo.tasks.jsonl'}: missing: run `orlgen generate`" in result.stdout
    assert orlgen("generate", gen).returncode == 0
    for name in ("echo.snapshot.json", "echo.tasks.jsonl", "echo.py"):
        assert (gen / name).read_bytes() == (GENERATED / name).read_bytes()
    assert orlgen("check", gen).returncode == 0


def test_check_of_a_missing_path_is_an_error(tmp_path: Path):
    assert_one_error_line(orlgen_process("check", tmp_path / "nowhere"), "nowhere")


def test_binary_garbage_snapshot_is_a_finding_naming_the_file(gen: Path):
    path = gen / "echo.snapshot.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff" + path.read_bytes())
    assert snapshot_problem(orlgen_process("check", gen), path).startswith("invalid snapshot: not UTF-8")


# --------------------------------------------------------------------------------------------
# generate repairs drift, and writes only what changed
# --------------------------------------------------------------------------------------------


def _break(gen: Path, kind: str) -> None:
    if kind == "hand-edited":
        hand_edit(gen / "echo.py")
    elif kind == "stale":
        change_snapshot(gen / "echo.snapshot.json")
    elif kind == "missing":
        (gen / "echo.py").unlink()
    elif kind == "orphaned":
        (gen / "other.py").write_bytes((GENERATED / "echo.py").read_bytes())


@pytest.mark.slow
@pytest.mark.parametrize(
    "kinds",
    [
        pytest.param(("hand-edited",), id="hand-edited"),
        pytest.param(("stale",), id="stale"),
        pytest.param(("missing",), id="missing"),
        pytest.param(("hand-edited", "stale"), id="hand-edited+stale"),
        pytest.param(("orphaned",), id="orphaned"),
    ],
)
def test_generate_repairs_drift(gen: Path, kinds: tuple[str, ...]):
    for kind in kinds:
        _break(gen, kind)
    before = orlgen("check", gen)
    assert before.returncode == 1
    assert "run `orlgen generate`" in before.stdout + before.stderr

    generated = orlgen("generate", gen)
    assert generated.returncode == 0, generated.stderr
    after = orlgen("check", gen)
    assert (after.returncode, after.stdout) == (0, "generated files are current\n"), after.stdout
    if "stale" not in kinds:  # same snapshots as the repository: same bytes as the repository
        assert (gen / "echo.py").read_bytes() == (GENERATED / "echo.py").read_bytes()


@pytest.mark.slow
def test_generate_does_not_rewrite_current_files(gen: Path):
    for path in gen.iterdir():
        os.utime(path, (OLD, OLD))
    hand_edit(gen / "echo.py")
    os.utime(gen / "echo.py", (OLD, OLD))
    result = orlgen("generate", gen)
    assert result.returncode == 0, result.stderr
    assert f"unchanged {gen / 'helpdesk.py'}" in result.stdout.splitlines()
    assert f"wrote {gen / 'echo.py'}" in result.stdout.splitlines()
    assert (gen / "helpdesk.py").stat().st_mtime == OLD
    assert (gen / "helpdesk.snapshot.json").stat().st_mtime == OLD
    assert (gen / "echo.snapshot.json").stat().st_mtime == OLD
    assert (gen / "echo.py").stat().st_mtime != OLD
    assert (gen / "echo.py").read_bytes() == (GENERATED / "echo.py").read_bytes()
    assert sorted(p.name for p in gen.iterdir()) == sorted(p.name for p in GENERATED.iterdir() if p.is_file())


# --------------------------------------------------------------------------------------------
# the speed cache: outside the repository, never changes the verdict
# --------------------------------------------------------------------------------------------


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "orlgen" / "check"


def test_the_cache_lives_outside_the_repository_and_remembers_current_files(gen: Path, cache_home: Path):
    assert orlgen("check", "--cache", gen).stdout == "generated files are current\n"
    verdicts = [path for path in cache_home.iterdir() if path.name != "key"]
    assert len(verdicts) == len(list(gen.iterdir()))  # one entry per module and snapshot
    assert not any("cache" in path.name for path in gen.iterdir())


def test_a_warm_cache_skips_rendering(gen: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch):
    """Fault injection: with rendering broken, only remembered verdicts can pass."""
    from orlgen.render import jobs as render

    assert orlgen("check", "--cache", gen).returncode == 0

    def broken(*args: object) -> str:
        raise AssertionError("rendered despite a cached verdict")

    monkeypatch.setattr(render, "render_module", broken)
    monkeypatch.setattr(render, "render_mixture", broken)
    assert orlgen("check", "--cache", gen).returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("edit", ["body", "header"])
def test_a_warm_cache_still_catches_every_edit(gen: Path, cache_home: Path, edit: str):
    assert orlgen("check", "--cache", gen).returncode == 0
    module = gen / "echo.py"
    if edit == "body":
        hand_edit(module)
    else:
        module.write_bytes(module.read_bytes().replace(b"DO NOT EDIT.", b"DO NOT EDIT!", 1))
    result = orlgen("check", "--cache", gen)
    assert result.returncode == 1 and problems(result.stdout)["echo.py"].startswith("hand-edited")


def test_generate_renders_only_the_module_whose_snapshot_changed(
    gen: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch
):
    """Fault injection: every module but word_grid's renders broken; the warm cache keeps them
    (word_grid is in no mixture)."""
    from orlgen.render import jobs as render

    assert orlgen("generate", gen).returncode == 0  # warms the cache
    path = gen / "word_grid.snapshot.json"
    old = snapshot.load(path)
    first = old.tools[0].model_copy(update={"description": "Reworded upstream."})
    write_files(old.model_copy(update={"tools": [first, *old.tools[1:]]}).canonical().files(path))
    rendered: list[str] = []
    real = render.render_module

    def only_echo(snapshot: snapshot.Snapshot, *args: object) -> str:
        rendered.append(snapshot.name)
        if snapshot.name != "word_grid":
            raise AssertionError(f"rendered {snapshot.name} again, although its snapshot did not change")
        return real(snapshot, *args)

    monkeypatch.setattr(render, "render_module", only_echo)
    monkeypatch.setattr(render, "render_mixture", lambda *args: pytest.fail("rendered the mixture again"))
    result = orlgen("generate", gen)
    assert result.returncode == 0, result.stderr
    assert rendered == ["word_grid"] and f"wrote {gen / 'word_grid.py'}" in result.stdout
    monkeypatch.undo()
    assert orlgen("check", "--no-cache", gen).returncode == 0


@pytest.mark.slow
def test_a_cached_verdict_does_not_survive_a_snapshot_change(gen: Path, cache_home: Path):
    assert orlgen("check", "--cache", gen).returncode == 0
    change_snapshot(gen / "echo.snapshot.json")
    result = orlgen("check", "--cache", gen)
    assert result.returncode == 1 and problems(result.stdout)["echo.py"].startswith("stale: the snapshot changed")


def test_a_mixture_missing_a_member_is_refused_not_dropped(tmp_path: Path):
    """A mixture whose member has no snapshot (a typo in the config) stops `generate` with one
    line; its module is not removed as an orphan."""
    gen = tmp_path / "generated"
    shutil.copytree(GENERATED, gen)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orlgen]\nout = "generated"\n\n[[tool.orlgen.mixtures]]\nname = "support_mix"\nenvs = ["echo", "helpdesks"]\n'
    )
    result = orlgen("generate", gen)  # the project is found from the path: tmp_path's pyproject
    assert result.returncode == 2 and "mixture 'support_mix' names 'helpdesks'" in result.stderr
    assert (gen / "support_mix.py").exists()
