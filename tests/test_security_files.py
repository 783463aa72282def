"""A PR author controls every byte of the repository: `check` must catch every tampering, and
no name, snapshot or config may make orlgen write, overwrite or delete a file it does not own.

Each case plays the attacker for real: snapshots are resealed the way `snapshot.py` seals them,
commands run as real child processes or through click's runner, and the outcome asserted is
the one a user needs (exit code, the cause named, the files left alone).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from orlgen.review import files
from orlgen.serve import ServerProcess
from test_check import GENERATED, REPO, Result, hand_edit, orlgen, orlgen_process, problems

from tests.support.cli import start_orlgen


@pytest.fixture
def gen(tmp_path: Path) -> Path:
    """A private copy of the checked-in `generated/` directory."""
    return Path(shutil.copytree(GENERATED, tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__")))


# --------------------------------------------------------------------------------------------
# check: the tampering table
# --------------------------------------------------------------------------------------------


def reseal_snapshot(path: Path, mutate: Callable[[dict[str, Any]], None]) -> None:
    """Edit a snapshot's interface JSON and recompute its seal as snapshot.py hashes it (the
    canonical JSON of every other field)."""
    data = json.loads(path.read_text(encoding="utf-8"))  # Python's json accepts NaN, as an attacker's tool would
    mutate(data)
    body = {key: value for key, value in data.items() if key != "sha256"}
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    data["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def reseal_body_hash(module: Path) -> None:
    """If the header records a hash of the body (as orlgen's header once did), recompute it."""
    lines = module.read_text().splitlines(keepends=True)
    for number, line in enumerate(lines):
        if line.startswith("# Body sha256 "):
            body = hashlib.sha256("".join(lines[number + 1 :]).encode()).hexdigest()
            lines[number] = re.sub(r"Body sha256 [0-9a-f]{64}", f"Body sha256 {body}", line)
    module.write_text("".join(lines))


def body_edited_hash_resealed(gen: Path) -> Path:
    module = gen / "echo.py"
    hand_edit(module)
    reseal_body_hash(module)
    return module


def header_line_changed(gen: Path) -> Path:
    module = gen / "echo.py"
    module.write_text(module.read_text().replace("DO NOT EDIT.", "Edit freely.", 1))
    return module


def snapshot_hash_forged(gen: Path) -> Path:
    """The snapshot is changed and resealed, and the module's header made to name the new hash
    while its body stays as it was: the header claims a render that never happened."""
    path, module = gen / "echo.snapshot.json", gen / "echo.py"
    old = json.loads(path.read_text())["sha256"]

    def reword(data: dict[str, Any]) -> None:
        next(tool for tool in data["tools"] if tool["name"] == "echo")["description"] = "Echo, reworded."

    reseal_snapshot(path, reword)
    new = json.loads(path.read_text())["sha256"]
    module.write_text(module.read_text().replace(old, new))  # the header and SNAPSHOT_SHA256
    reseal_body_hash(module)
    return module


def nan_for_null_in_snapshot(gen: Path) -> Path:
    """NaN where the snapshot had a null default, the seal kept: it held while pydantic hashed NaN
    as null; now the seal is computed without that conversion, and the NaN is refused anyway."""
    path = gen / "hostile.snapshot.json"
    text = path.read_text()
    assert '"default": null' in text, "the hostile snapshot has a null default to poison"
    path.write_text(text.replace('"default": null', '"default": NaN', 1))
    return path


def snapshot_text_escaped(gen: Path) -> Path:
    """The same content spelt with JSON escapes: the seal holds, but the diff a reviewer reads
    no longer shows the words a description sends to the model."""
    path = gen / "echo.snapshot.json"
    text = path.read_text()
    assert '"description": "Echo' in text
    path.write_text(text.replace('"description": "Echo', '"description": "\\u0045cho', 1))
    return path


def coding_cookie(gen: Path) -> Path:
    """Line 2 turned into a utf-7 coding cookie: `+AAo-` in any docstring becomes a newline, and
    text a server wrote becomes code."""
    module = gen / "echo.py"
    lines = module.read_text().splitlines(keepends=True)
    lines[1] = "# -*- coding: utf-7 -*-\n"
    module.write_text("".join(lines))
    return module


def module_replaced_by_a_link(gen: Path) -> Path:
    secret = gen.parent / "ci-secret.txt"
    secret.write_text("TOP-SECRET-TOKEN\n")
    module = gen / "echo.py"
    module.unlink()
    module.symlink_to(secret)
    return module


def snapshot_replaced_by_a_link(gen: Path) -> Path:
    elsewhere = gen.parent / "elsewhere.snapshot.json"
    path = gen / "echo.snapshot.json"
    shutil.move(path, elsewhere)
    path.symlink_to(elsewhere)
    return path


@pytest.mark.parametrize(
    ("tamper", "cause"),
    [
        pytest.param(body_edited_hash_resealed, "hand-edited", id="body-edited-hash-resealed"),
        pytest.param(header_line_changed, "hand-edited: header line 1", id="header-line"),
        pytest.param(snapshot_hash_forged, "hand-edited", id="hash-forged"),
        pytest.param(nan_for_null_in_snapshot, "invalid snapshot: not valid JSON: NaN", id="nan-for-null"),
        pytest.param(coding_cookie, "hand-edited: header line 2", id="coding-cookie"),
        pytest.param(snapshot_text_escaped, "not canonical", id="snapshot-escaped"),
        pytest.param(module_replaced_by_a_link, "hand-edited: not a regular file", id="module-symlink"),
        pytest.param(snapshot_replaced_by_a_link, "hand-edited: not a regular file", id="snapshot-symlink"),
    ],
)
@pytest.mark.slow
def test_check_catches_every_tampering(gen: Path, tamper: Callable[[Path], Path], cause: str):
    tampered = tamper(gen)
    result = orlgen("check", gen)
    assert result.returncode == 1, result.stdout
    assert any(line.startswith(f"{tampered}: {cause}") for line in result.stdout.splitlines()), result.stdout


def test_check_never_prints_a_file_a_link_points_to(gen: Path):
    """A link committed in place of a module would make CI print, say, a credentials file in
    check's diff: check reports the link and reads nothing through it."""
    module_replaced_by_a_link(gen)
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert "TOP-SECRET" not in result.stdout + result.stderr


@pytest.mark.slow
def test_a_tampered_file_fails_check_with_a_warm_cache_too(gen: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert orlgen("check", "--cache", gen).returncode == 0
    coding_cookie(gen)
    assert orlgen("check", "--cache", gen).returncode == 1


# --------------------------------------------------------------------------------------------
# writes stay in --out, and never replace or remove a file orlgen did not write
# --------------------------------------------------------------------------------------------


def assert_refused(result: Result, *fragments: str) -> None:
    assert result.returncode == 2, result
    assert result.stderr.startswith("orlgen: error: ") and result.stderr.count("\n") == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def files_under(directory: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(directory)): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()
    }


@pytest.mark.parametrize("name", ["../escaped", "<absolute>", "__init__", "class"])
def test_a_module_name_that_leaves_out_or_shadows_a_package_file_is_refused(tmp_path: Path, echo_url: str, name: str):
    name = str(tmp_path / "absolute") if name == "<absolute>" else name
    out = tmp_path / "project" / "out"
    result = orlgen("snapshot", echo_url, "--name", name, "--out", out)
    assert_refused(result, repr(name), "refused")
    assert files_under(tmp_path) == {}


def write_project(directory: Path, table: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").write_text(table)
    return directory


def test_a_config_env_name_outside_out_is_refused(tmp_path: Path, echo_url: str, monkeypatch: pytest.MonkeyPatch):
    project = write_project(
        tmp_path / "project", f'[[tool.orlgen.envs]]\ntarget = "{echo_url}"\nname = "../../escaped"\n'
    )
    monkeypatch.chdir(project)
    assert_refused(orlgen("sync"), "'../../escaped'", "refused")
    assert files_under(tmp_path) == {"project/pyproject.toml": (project / "pyproject.toml").read_bytes()}


@pytest.mark.parametrize("name", ["../evil", "__init__", "echo"])
def test_a_mixture_name_outside_out_or_over_an_env_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
):
    project = write_project(
        tmp_path / "project", f'[[tool.orlgen.mixtures]]\nname = "{name}"\nenvs = ["echo", "helpdesk"]\n'
    )
    shutil.copytree(GENERATED, project / "generated", ignore=shutil.ignore_patterns("__pycache__", "support_mix.py"))
    before = files_under(tmp_path)
    monkeypatch.chdir(project)
    assert_refused(orlgen("generate"), f"mixture name {name!r} refused")
    assert files_under(tmp_path) == before


def test_a_snapshot_cannot_aim_its_module_at_another_file(gen: Path):
    """A snapshot whose recorded name is `__init__`, resealed: generate must not write __init__.py."""
    path = gen / "echo.snapshot.json"
    reseal_snapshot(path, lambda data: data.update(name="__init__"))
    assert_refused(orlgen("generate", gen), str(path), "'__init__'")
    assert not (gen / "__init__.py").exists()
    assert problems(orlgen("check", gen).stdout) == {}  # reported against the snapshot, exit 1 (below)
    assert "echo.snapshot.json: invalid snapshot" in orlgen("check", gen).stdout


@pytest.mark.slow
def test_a_capture_never_clobbers_the_environments_own_module(tmp_path: Path):
    """`orlgen snapshot greeter:Greeter --out .` names the module after the env: greeter.py,
    which is the environment's own hand-written file."""
    source = (REPO / "tests" / "support" / "envs" / "stalling.py").read_text()
    own = source.replace("class Stalling(", "class Greeter(").replace(
        '        Path(os.environ["ORLGEN_STALL_FILE"]).touch()\n        time.sleep(600)\n', ""
    )
    (tmp_path / "greeter.py").write_text(own)
    result = orlgen_process("snapshot", "greeter:Greeter", "--out", ".", cwd=tmp_path)
    assert_refused(result, "greeter.py", "refused to overwrite", "did not write it")
    assert (tmp_path / "greeter.py").read_text() == own
    assert not (tmp_path / "greeter.snapshot.json").exists()  # nothing written: no snapshot without its module


def test_a_capture_never_replaces_another_envs_snapshot(tmp_path: Path, echo_url: str, helpdesk_url: str):
    out = tmp_path / "out"
    assert orlgen("snapshot", echo_url, "--name", "shared", "--out", out, "--no-generate").returncode == 0
    before = files_under(out)
    assert_refused(
        orlgen("snapshot", helpdesk_url, "--name", "shared", "--out", out),
        "shared.snapshot.json",
        "choose another --name",
    )
    assert files_under(out) == before


@pytest.mark.slow
def test_generate_from_another_directory_keeps_the_mixture_module(tmp_path: Path):
    """The config belongs to the directory being generated, not to the working directory."""
    project = write_project(tmp_path / "project", (REPO / "pyproject.toml").read_text())
    shutil.copytree(GENERATED, project / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = files_under(project / "generated")
    result = orlgen_process("generate", project / "generated", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "removed" not in result.stdout
    assert files_under(project / "generated") == before


# --------------------------------------------------------------------------------------------
# Ctrl-C: exit 130, no snapshot without its module
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_ctrl_c_during_a_capture_exits_130_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    stalled = tmp_path / "stalled"
    monkeypatch.setenv("ORLGEN_STALL_FILE", str(stalled))
    out = tmp_path / "out"
    with ServerProcess("tests.support.envs.stalling:Stalling") as server:
        process = start_orlgen("snapshot", server.url, "--out", out)
        deadline = time.monotonic() + 60
        while not stalled.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stalled.exists(), process.communicate()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr
    assert not out.exists() or files_under(out) == {}


def test_ctrl_c_while_writing_finishes_the_batch_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Fault injection: the interrupt arrives during the first write; the batch still completes
    (module before snapshot), then the interrupt is raised."""
    if sys.platform == "win32":
        pytest.skip("POSIX signals")
    real_write = files.write_atomic
    calls: list[Path] = []

    def interrupted_write(path: Path, data: bytes) -> None:
        if not calls:
            os.kill(os.getpid(), signal.SIGINT)
        calls.append(path)
        real_write(path, data)

    monkeypatch.setattr(files, "write_atomic", interrupted_write)
    batch = {
        tmp_path / "env.snapshot.json": b'{"format_version": 1, "sha256": ""}\n',
        tmp_path / "env.py": b"# module\n",
    }
    with pytest.raises(KeyboardInterrupt):
        files.write_files(batch)
    assert calls == [tmp_path / "env.py", tmp_path / "env.snapshot.json"]
    assert all(path.read_bytes() == data for path, data in batch.items())


def test_a_rewritten_module_never_runs_its_old_bytecode(tmp_path: Path):
    """Python reuses a module's cached bytecode when the source's size and mtime (whole seconds)
    match what it recorded. A regenerated module of the same size written within the same
    second (forced here by setting the mtime back, so the case does not depend on timing) must
    still import as written."""
    module = tmp_path / "env.py"
    same_second = 1_700_000_000

    def imported_value() -> str:
        environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        os.utime(module, (same_second, same_second))
        return subprocess.run(
            [sys.executable, "-c", "import env; print(env.VALUE)"],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    files.write_atomic(module, b"VALUE = 1\n")
    assert imported_value() == "1"
    assert list((tmp_path / "__pycache__").glob("env.*.pyc")), "the first import cached bytecode"
    files.write_atomic(module, b"VALUE = 2\n")
    assert imported_value() == "2"


def test_bytecode_removal_stays_out_of_a_linked_pycache(tmp_path: Path):
    """A committed `__pycache__` link could aim the removal at another directory's files."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "env.cpython-311.pyc").write_bytes(b"not ours")
    out = tmp_path / "out"
    out.mkdir()
    (out / "__pycache__").symlink_to(elsewhere, target_is_directory=True)
    files.write_atomic(out / "env.py", b"VALUE = 1\n")
    assert (elsewhere / "env.cpython-311.pyc").read_bytes() == b"not ours"
