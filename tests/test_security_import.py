"""`check` proves what `import generated.<m>` runs, and shows where it connects (issue 26, items
1, 2, 6, 7, 9 and 13a).

Each attack runs for real on a private copy of the project: the forged bytecode and the
shadowing modules are first shown to take over a real `import` in a child process (the attack
works), then `check` must fail naming the file. Targets and secrets resealed by a pull request
are named by `check` and `diff`; `out` and `templates` that point elsewhere are one line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from importlib._bootstrap_external import _code_to_hash_pyc  # type: ignore[attr-defined]
from pathlib import Path

import pytest
import test_security_repo
from orlgen.review.files import write_files
from orlgen.snapshot.model import Target, load
from test_check import Result, orlgen
from test_security_repo import ROOT_CONFIG, assert_one_line, run

from tests.support.cli import command

CANARY = "CANARY-the-forged-code-ran"
project = test_security_repo.project  # the fixture: a private copy of the project, HOME and cache


def python(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The interpreter a training job runs, in a child process started in the project root."""
    environment = {**os.environ, **(env or {})}
    environment.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, *args], cwd=project, capture_output=True, text=True, timeout=120, env=environment
    )


def evil_source(project: Path) -> str:
    return f"import pathlib\npathlib.Path({str(project / CANARY)!r}).touch()\n"


def check_lines(project: Path, *args: str) -> list[str]:
    result = orlgen("check", *args, project / "generated")
    assert result.returncode == 1, result
    return result.stdout.splitlines()


# --------------------------------------------------------------------------------------------
# item 1: bytecode is trusted only when it is the code of the checked source
# --------------------------------------------------------------------------------------------


def forge_pyc(project: Path, suffix: str) -> Path:
    """A checked-hash pyc holding the real source's hash and other code: Python checks the hash
    against the source, never the code."""
    module = project / "generated" / "echo.py"
    code = compile(evil_source(project), str(module), "exec")
    pyc = project / "generated" / "__pycache__" / f"echo.{sys.implementation.cache_tag}{suffix}.pyc"
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(_code_to_hash_pyc(code, importlib.util.source_hash(module.read_bytes()), checked=True))
    return pyc


def pythons_own_cache(project: Path) -> list[Path]:
    """Bytecode compiled from the real source, under another file name, of every kind and at
    every optimisation level: the code of its source, so never a problem."""
    import py_compile

    written = []
    for level, suffix in ((0, ""), (1, ".opt-1"), (2, ".opt-2")):
        for name, mode in (("echo", "TIMESTAMP"), ("helpdesk", "CHECKED_HASH"), ("support_mix", "UNCHECKED_HASH")):
            pyc = project / "generated" / "__pycache__" / f"{name}.{sys.implementation.cache_tag}{suffix}.pyc"
            py_compile.compile(
                str(project / "generated" / f"{name}.py"),
                cfile=str(pyc),
                dfile=f"/elsewhere/{name}.py",
                optimize=level,
                invalidation_mode=py_compile.PycInvalidationMode[mode],
            )
            written.append(pyc)
    return written


@pytest.mark.slow
@pytest.mark.parametrize(("suffix", "flags"), [("", []), (".opt-1", ["-O"]), (".opt-2", ["-OO"])])
def test_a_checked_hash_pyc_with_other_code_fails_check(project: Path, suffix: str, flags: list[str]):
    own = pythons_own_cache(project)
    pyc = forge_pyc(project, suffix)
    ran = python(project, *flags, "-c", "import generated.echo")
    assert ran.returncode == 0 and (project / CANARY).exists(), ran.stderr  # the attack works
    for args in ((), ("--no-cache",)):
        lines = check_lines(project, *args)
        assert lines == [f"{pyc}: checked-hash bytecode that is not the code of its source: {RUNS}"], lines
    assert pyc in own  # it replaced Python's own file, which passed


RUNS = "Python runs it in place of the module; delete the __pycache__ folder (Python rebuilds it)"


def test_bytecode_of_another_interpreter_fails_check(project: Path):
    """Another Python's cache (its tag) would be run by that Python, and this one cannot compile it."""
    cache = project / "generated" / "__pycache__"
    cache.mkdir()
    unchecked = b"\x00\x00\r\n" + (0b01).to_bytes(4, "little") + bytes(8) + b"code of another Python"
    (cache / "echo.cpython-399.pyc").write_bytes(unchecked)
    (cache / "helpdesk.cpython-399.pyc").write_bytes(b"\x00\x00\r\n" + bytes(12))  # a stale timestamp: inert
    assert check_lines(project) == [
        f"{cache / 'echo.cpython-399.pyc'}: unchecked-hash bytecode for another interpreter (cpython-399): orlgen "
        "cannot compare it with its source; delete the __pycache__ folder (Python rebuilds it)"
    ]


def test_a_stale_cache_after_generate_is_inert(project: Path):
    """After a module changes, Python's cache of the old source no longer passes its header check:
    Python compiles the new source, so the old file is no problem (and the forged one still is)."""
    cache = pythons_own_cache(project)
    module = project / "generated" / "echo.py"
    module.write_text(module.read_text() + "\n")  # as generate would rewrite it: a new mtime, size and hash
    forged = forge_pyc(project, "")  # the forgery of the new source: the real threat
    lines = check_lines(project)
    assert [line for line in lines if "__pycache__" in line] == [
        f"{forged}: checked-hash bytecode that is not the code of its source: {RUNS}"
    ], lines
    assert all(pyc.exists() for pyc in cache)


# --------------------------------------------------------------------------------------------
# items 2 and 13a: nothing named like the output directory competes with it
# --------------------------------------------------------------------------------------------


def hijacker(project: Path) -> str:
    """A module that takes `generated` over, `generated.echo` included, from a folder of its own."""
    evil = project / "elsewhere"
    evil.mkdir(exist_ok=True)
    (evil / "echo.py").write_text(evil_source(project))
    return f"__path__ = [{str(evil)!r}]\n"


def root_module(project: Path) -> tuple[Path, list[str]]:
    (project / "generated.py").write_text(hijacker(project))
    return project / "generated.py", ["-c", "import generated.echo"]


def root_sourceless_pyc(project: Path) -> tuple[Path, list[str]]:
    source = project / "hijack.py"
    source.write_text(hijacker(project))
    import py_compile

    py_compile.compile(str(source), cfile=str(project / "generated.pyc"))
    source.unlink()
    return project / "generated.pyc", ["-c", "import generated.echo"]


def later_path_entry(project: Path) -> tuple[Path, list[str]]:
    """A script in examples/ puts examples/ on sys.path; even after the root, it wins."""
    (project / "examples").mkdir()
    (project / "examples" / "generated.py").write_text(hijacker(project))
    return project / "examples" / "generated.py", [
        "-c",
        "import sys; sys.path.append('examples'); import generated.echo",
    ]


def _under_pytest(project: Path) -> list[str]:
    (project / "tests" / "test_uses_echo.py").write_text("import generated.echo\n\n\ndef test_x():\n    pass\n")
    return ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_uses_echo.py"]


def in_tests_module(project: Path) -> tuple[Path, list[str]]:
    """pytest puts tests/ first on sys.path (rootdir insertion, `prepend` import mode)."""
    (project / "tests").mkdir()
    (project / "tests" / "generated.py").write_text(hijacker(project))
    return project / "tests" / "generated.py", _under_pytest(project)


def in_tests_folder(project: Path) -> tuple[Path, list[str]]:
    """An earlier folder named like the output directory is searched first, as a namespace portion too."""
    (project / "tests" / "generated").mkdir(parents=True)
    (project / "tests" / "generated" / "echo.py").write_text(evil_source(project))
    return project / "tests" / "generated", _under_pytest(project)


@pytest.mark.slow
@pytest.mark.parametrize(
    "plant",
    [root_module, root_sourceless_pyc, later_path_entry, in_tests_module, in_tests_folder],
    ids=lambda f: f.__name__,
)
def test_a_module_named_like_the_output_directory_fails_check(
    project: Path, plant: Callable[[Path], tuple[Path, list[str]]]
):
    (project / "docs").mkdir()
    (project / "docs" / "generated.md").write_text("# notes\n")  # not importable: no shadow
    (project / "generated_old.py").write_text("X = 1\n")  # another name: no shadow
    planted, importer = plant(project)
    ran = python(project, *importer)
    assert (project / CANARY).exists(), ran.stdout + ran.stderr  # the import ran the planted code
    lines = check_lines(project)
    assert len(lines) == 1 and lines[0].startswith(f"{planted}: named like the output directory"), lines


# --------------------------------------------------------------------------------------------
# items 6 and 7: targets and secrets a pull request reseals
# --------------------------------------------------------------------------------------------


def reseal(path: Path, target: Target, secret_names: list[str]) -> None:
    snapshot = load(path)
    write_files(snapshot.model_copy(update={"target": target, "secret_names": secret_names}).canonical().files(path))


def test_diff_flags_a_new_host_and_new_secrets_as_breaking(project: Path, tmp_path: Path):
    old = project / "generated" / "echo.snapshot.json"
    new_dir = tmp_path / "head"
    shutil.copytree(project / "generated", new_dir)
    new = new_dir / "echo.snapshot.json"
    reseal(new, Target(kind="url", value="http://collector.example:8080", env="echo"), ["OPENAI_API_KEY"])
    result = orlgen("diff", old, "--against", new)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("SECRETS_CHANGED") and "TRUST  BREAKING" in lines[0], lines
    assert lines[1].startswith("TARGET_CHANGED") and "'http://collector.example:8080'" in lines[1], lines
    github = orlgen("diff", old, "--against", new, "--format", "github").stdout
    assert "::error title=orlgen TARGET_CHANGED::" in github and "::error title=orlgen SECRETS_CHANGED::" in github


@pytest.mark.slow
def test_check_names_secrets_sent_where_the_config_does_not_say(project: Path):
    snapshot = project / "generated" / "echo.snapshot.json"
    reseal(snapshot, Target(kind="url", value="http://collector.example:8080", env="echo"), ["OPENAI_API_KEY"])
    assert orlgen("generate", project / "generated").returncode == 0  # the module is current again
    lines = check_lines(project)
    assert f"{snapshot}: TARGET_CHANGED: sends the secrets ['OPENAI_API_KEY'] to 'http://collector.example:8080'" in (
        "\n".join(lines)
    ), lines
    config = project / "pyproject.toml"
    entry = "\n[[tool.orlgen.envs]]\ntarget = 'http://collector.example:8080/'\nsecrets = [{}]\n"
    config.write_text(config.read_text() + entry.format(""))
    assert f"{snapshot}: SECRETS_CHANGED: sends ['OPENAI_API_KEY']" in "\n".join(check_lines(project))
    config.write_text(config.read_text().replace("secrets = []", "secrets = ['OPENAI_API_KEY']"))
    granted = orlgen("check", project / "generated")
    assert granted.returncode == 0, granted.stdout  # declared in the reviewed config: fine


@pytest.mark.slow
def test_check_refuses_a_look_alike_module_target(project: Path):
    snapshot = project / "generated" / "echo.snapshot.json"
    reseal(snapshot, Target(kind="module", value="examples.\u0435cho:Echo", env="echo"), [])  # Cyrillic е
    assert orlgen("generate", project / "generated").returncode == 0
    lines = check_lines(project)
    expected = f"{snapshot}: TARGET_CHANGED: target refused: 'examples.\\u0435cho:Echo' is not a plain module:Class"
    assert any(line.startswith(expected) for line in lines), lines


def test_capture_refuses_a_look_alike_module_target_before_importing_it(tmp_path: Path):
    (tmp_path / "lookpkg").mkdir()
    (tmp_path / "lookpkg" / "\u0435cho.py").write_text(evil_source(tmp_path))
    result = run("snapshot", "lookpkg.\u0435cho:Echo", "--out", tmp_path / "gen", cwd=tmp_path)
    assert_one_line(result, "'lookpkg.\\u0435cho:Echo' is not a plain module:Class target")
    assert not (tmp_path / CANARY).exists() and not (tmp_path / "gen").exists()


# --------------------------------------------------------------------------------------------
# item 9: `out` and `templates` are paths inside the project, as written
# --------------------------------------------------------------------------------------------


def _config(project: Path, out: str = "generated", templates: str = "tpl") -> None:
    text = ROOT_CONFIG.format(extra=f"templates = {json.dumps(templates)}").replace('"generated"', json.dumps(out))
    (project / "pyproject.toml").write_text(text)


def trailing_dot(project: Path) -> tuple[str, str]:
    shutil.copytree(project / "generated", project / "generated.")
    _config(project, out="generated.")
    return "out", "ends with a dot"


def trailing_space(project: Path) -> tuple[str, str]:
    shutil.copytree(project / "generated", project / "generated ")
    _config(project, out="generated ")
    return "out", "ends with a space"


def absolute_out(project: Path) -> tuple[str, str]:
    copy = project.parent / "copy"
    shutil.copytree(project / "generated", copy)
    _config(project, out=str(copy))
    return "out", "an absolute path"


def parent_out(project: Path) -> tuple[str, str]:
    shutil.copytree(project / "generated", project.parent / "copy")
    _config(project, out="../copy")
    return "out", "leaves the project"


def linked_out(project: Path) -> tuple[str, str]:
    shutil.copytree(project / "generated", project.parent / "copy")
    (project / "gen").symlink_to(project.parent / "copy")
    _config(project, out="gen")
    return "out", "gen is a symbolic link"


def linked_templates(project: Path) -> tuple[str, str]:
    (project / "shared").symlink_to(project.parent, target_is_directory=True)
    shutil.copytree(project / "tpl", project.parent / "tpl")
    _config(project, templates="shared/tpl")
    return "templates", "shared is a symbolic link"


def absolute_templates(project: Path) -> tuple[str, str]:
    _config(project, templates=str(project / "tpl"))
    return "templates", "an absolute path"


@pytest.mark.parametrize(
    "plant",
    [trailing_dot, trailing_space, absolute_out, parent_out, linked_out, linked_templates, absolute_templates],
    ids=lambda f: f.__name__,
)
def test_out_and_templates_must_be_plain_paths_inside_the_project(
    project: Path, plant: Callable[[Path], tuple[str, str]]
):
    key, why = plant(project)
    assert_one_line(orlgen("check", project / "generated"), f"[tool.orlgen] {key}", why)


# --------------------------------------------------------------------------------------------
# item 8: templates bounded in memory and output, every failure one line
# --------------------------------------------------------------------------------------------

BOMBS = {
    "percent": '{{ "%2000000000d" % 1 }}',
    "format-width": "{{ '{:>2000000000}'.format('') }}",
    "center": "{{ ''|center(2000000000) }}",
    "replace-empty": "{{ ('x' * 1000000)|replace('', 'x' * 1000000) }}",
    "join-of-a-product": "{{ (('x' * 1000000,) * 1000000)|join }}",
    "growing-loop": '{% for a in "x" * 1000000 %}{{ "y" * 1000000 }}{% endfor %}',
}


# Linux carries a process's peak RSS through fork and exec, so a child of this (large) pytest
# process would report pytest's peak as its own: a small launcher starts `orlgen check` and
# reports its child's peak, which then starts from the launcher's size.
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss * 1024))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def check_with_peak_memory(project: Path) -> tuple[Result, int]:
    """`orlgen check` in a child process: its result and its own peak RSS in bytes (`wait4`)."""
    out, err, peak = (project.parent / name for name in ("stdout", "stderr", "peak"))
    with out.open("w") as stdout, err.open("w") as stderr:
        launched = [sys.executable, "-c", _LAUNCHER, str(peak), *command("check")]
        child = subprocess.run(launched, cwd=project, stdout=stdout, stderr=stderr)
    return Result(child.returncode, out.read_text(), err.read_text()), int(peak.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("payload", list(BOMBS.values()), ids=list(BOMBS))
def test_a_template_cannot_allocate_gigabytes(project: Path, payload: str):
    test_security_repo.poison(project, payload)
    result, peak = check_with_peak_memory(project)
    assert_one_line(result, "module.py.jinja line 1", "needs more than 512 MiB of memory")
    assert peak < 800 << 20, peak


@pytest.mark.parametrize(
    "payload", ["this is not python {{ context_version }}", "x = 1\n\x00"], ids=["prose", "null-byte"]
)
def test_a_template_whose_output_is_not_python_is_one_line(project: Path, payload: str):
    test_security_repo.poison(project, payload)
    for args in (("check",), ("check", "--no-cache"), ("generate",)):
        result = orlgen(*args, project / "generated")
        assert_one_line(result, f"{project / 'tpl' / 'module.py.jinja'}: its output is not Python (line ")
