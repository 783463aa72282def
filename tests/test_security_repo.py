"""A pull request controls every byte of the repository (issue 17, items 1-3): templates,
config, every file of the output directory and anything the cache could be made to trust.

Each attack runs for real against a private copy of the project (its pyproject, `generated/`
and an override templates directory), through the CLI in-process or as a child process. What
must hold: templates run no code and read no file but their own; `check` fails, naming the file
and why, on anything in the output directory that could change what `import generated.<m>`
runs or what a type checker sees, and `generate`/`snapshot` agree with it; `check --cache`
gives the same verdict as `check` in every case.
"""

from __future__ import annotations

import hashlib
import json
import os
import py_compile
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from orlgen import lookalike
from orlgen.review import cache
from orlgen.snapshot.model import load
from test_check import GENERATED, REPO, Result, hand_edit, orlgen, problems

from tests.support.cli import run_orlgen

# helpdesk as the project renders it, for three trainers: its TRL module imports its models file.
HELPDESK_ENV = '[[tool.orlgen.envs]]\ntarget = "examples.helpdesk:Helpdesk"\ntrainers = ["trl", "verifiers", "skyrl", "agent", "verl"]\n'
ROOT_CONFIG = (
    '[tool.orlgen]\nout = "generated"\n{extra}\n'
    + HELPDESK_ENV
    + '[[tool.orlgen.mixtures]]\nname = "support_mix"\nenvs = ["echo", "helpdesk"]\n'
)
CANARY_NAME = "CANARY-written-by-a-template"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the project: root pyproject with override templates in `tpl/`, `generated/`.
    HOME and the cache are private, so no test touches the real ones."""
    root = tmp_path / "project"
    keep = ("echo.", "helpdesk", "support_mix.", "orlgen.lock")  # the smallest copy with a mixture: quick to render
    shutil.copytree(GENERATED, root / "generated", ignore=lambda _, names: [n for n in names if not n.startswith(keep)])
    shutil.copytree(REPO / "templates", root / "tpl")
    (root / "pyproject.toml").write_text(ROOT_CONFIG.format(extra='templates = "tpl"'))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return root


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60) -> Result:
    done = run_orlgen(*args, cwd=cwd, env={**os.environ, **(env or {})}, timeout=timeout)
    return Result(done.returncode, done.stdout, done.stderr)


def assert_one_line(result: Result, *fragments: str) -> None:
    assert result.returncode == 2, result
    assert result.stderr.startswith("orlgen: error: ") and result.stderr.count("\n") == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def files_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------------------------
# item 1: templates are data, not code
# --------------------------------------------------------------------------------------------

PAYLOADS = {
    "cycler-globals": '{% set _ = cycler.__init__.__globals__.os.system("touch CANARY") %}',
    "lipsum-globals": '{% set _ = lipsum.__globals__["os"].system("touch CANARY") %}',
    "mro-subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "plan-object": "{{ plan.__class__.__init__.__globals__ }}",
    "format-escape": "{{ '{0.__class__.__init__.__globals__}'.format(plan) }}",
    "mutate-context": "{% set _ = plan.tools.append(1) %}",
}


def poison(project: Path, payload: str) -> None:
    template = project / "tpl" / "module.py.jinja"
    template.write_text(payload.replace("CANARY", str(project / CANARY_NAME)) + "\n" + template.read_text())


@pytest.mark.parametrize("payload", list(PAYLOADS.values()), ids=list(PAYLOADS))
def test_a_template_runs_no_code_in_check(project: Path, payload: str):
    poison(project, payload)
    result = orlgen("check", project / "generated")
    assert_one_line(result, "module.py.jinja")
    assert not (project / CANARY_NAME).exists()


def test_a_template_runs_no_code_in_generate_and_writes_nothing(project: Path):
    poison(project, PAYLOADS["cycler-globals"])
    before = files_of(project / "generated")
    assert_one_line(orlgen("generate", project / "generated"), "module.py.jinja line 1")
    assert not (project / CANARY_NAME).exists()
    assert files_of(project / "generated") == before


def test_a_template_runs_no_code_in_the_pre_commit_hook(project: Path):
    """The hook as pre-commit runs it: its `entry`, in the repository, with orlgen on PATH."""
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    poison(project, PAYLOADS["cycler-globals"])
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the installed `orlgen` script
    done = subprocess.run(hook["entry"], shell=True, cwd=project, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": path})  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert not (project / CANARY_NAME).exists()


@pytest.mark.parametrize("how", ["symlink", "not-a-template"])
def test_a_template_reads_no_file_but_a_template(project: Path, tmp_path: Path, how: str):
    """`{% include %}` of a link to a CI secret, or of a file not named *.jinja: one line, and the
    secret appears nowhere (it once did, in check's diff). Paths out of the directory (`../x`,
    absolute) were refused before and still are."""
    secret = tmp_path / "ci-secret.jinja"
    secret.write_text("TOP-SECRET-TOKEN\n")
    names = {"symlink": "secret.jinja", "not-a-template": "notes.txt"}
    if how == "symlink":
        (project / "tpl" / "secret.jinja").symlink_to(secret)
    if how == "not-a-template":
        (project / "tpl" / "notes.txt").write_text("TOP-SECRET-TOKEN\n")
    poison(project, f'{{% include "{names[how]}" %}}')
    for args in (("check",), ("check", "--cache")):
        result = orlgen(*args, project / "generated")
        assert_one_line(result)
        assert "TOP-SECRET" not in result.stdout + result.stderr


def test_a_template_linked_to_dev_zero_is_one_line_with_or_without_the_cache(project: Path):
    template = project / "tpl" / "module.py.jinja"
    template.unlink()
    template.symlink_to("/dev/zero")
    for args in (("check",), ("check", "--cache")):
        assert_one_line(run(*args, cwd=project, timeout=30), "module.py.jinja", "symbolic link")


@pytest.mark.slow
def test_rendering_has_a_deadline(project: Path):
    """A template (or snapshot) that makes rendering take forever ends in one line, in time."""
    poison(project, '{% for a in "x" * 1000000 %}{% for b in "x" * 1000000 %}{% endfor %}{% endfor %}')
    result = run("check", cwd=project, env={"ORLGEN_RENDER_DEADLINE": "2"}, timeout=40)
    assert_one_line(result, "took longer than 2 s")


def test_a_template_cannot_exhaust_memory(project: Path):
    poison(project, '{{ "x" * 100000000000 }}')
    assert_one_line(run("check", cwd=project, timeout=30), "module.py.jinja line 1", "repetition")


def test_a_pyproject_inside_the_output_directory_is_refused(project: Path):
    """`orlgen check generated` once read generated/pyproject.toml: a PR's own templates."""
    (project / "generated" / "pyproject.toml").write_text('[tool.orlgen]\nout = "."\ntemplates = "../evil"\n')
    poison_dir = project / "evil"
    shutil.copytree(REPO / "templates", poison_dir)
    (poison_dir / "module.py.jinja").write_text(
        PAYLOADS["cycler-globals"].replace("CANARY", str(project / CANARY_NAME))
    )
    assert_one_line(orlgen("check", project / "generated"), "generated/pyproject.toml: refused")
    result = run("check", cwd=project)  # the root config: the nested one is a finding
    assert result.returncode == 1
    assert f"{Path('generated') / 'pyproject.toml'}: a project config inside the output directory" in result.stdout
    assert not (project / CANARY_NAME).exists()


# --------------------------------------------------------------------------------------------
# item 2: check owns its directory
# --------------------------------------------------------------------------------------------


def init_file(gen: Path) -> Path:
    (gen / "__init__.py").write_text("import os\n")
    return gen / "__init__.py"


def package_folder(gen: Path) -> Path:
    (gen / "echo").mkdir()
    (gen / "echo" / "__init__.py").write_text("print('not the generated echo')\n")
    return gen / "echo"


def unchecked_hash_pyc(gen: Path) -> Path:
    """Committed with `git add -f`: Python runs it and never looks at echo.py."""
    evil = gen.parent / "evil_echo.py"
    evil.write_text("print('not the generated echo')\n")
    cache_dir = gen / "__pycache__"
    cache_dir.mkdir()
    pyc = cache_dir / f"echo.{sys.implementation.cache_tag}.pyc"
    py_compile.compile(str(evil), cfile=str(pyc), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    return pyc


def extension_module(gen: Path) -> Path:
    path = gen / "echo.cpython-311-x86_64-linux-gnu.so"
    path.write_bytes(b"\x7fELF")
    return path


def stub(gen: Path) -> Path:
    (gen / "echo.pyi").write_text("class EchoEnv:\n    def echo(self, text: int) -> None: ...\n")
    return gen / "echo.pyi"


def pth_file(gen: Path) -> Path:
    (gen / "evil.pth").write_text("import os; os.system('true')\n")
    return gen / "evil.pth"


def conftest_file(gen: Path) -> Path:
    (gen / "conftest.py").write_text("import os\n")
    return gen / "conftest.py"


def sourceless_pyc(gen: Path) -> Path:
    path = gen / "helpers.pyc"
    py_compile.compile(str(gen / "echo.py"), cfile=str(path))
    return path


def other_module(gen: Path) -> Path:
    (gen / "helpers.py").write_text("X = 1\n")
    return gen / "helpers.py"


def bom_before_the_header(gen: Path) -> Path:
    """An owned module with a BOM: Python ignores it, so it only hides an edit of line 1."""
    module = gen / "echo.py"
    module.write_bytes(b"\xef\xbb\xbf" + module.read_bytes())
    return module


DIRECTORY_TABLE = [
    pytest.param(init_file, "a package file orlgen does not write", id="__init__.py"),
    pytest.param(package_folder, "a package folder", id="package-folder"),
    pytest.param(unchecked_hash_pyc, "unchecked-hash bytecode", id="unchecked-hash-pyc"),
    pytest.param(extension_module, "a compiled extension module", id="extension-module"),
    pytest.param(stub, "a type stub", id="pyi"),
    pytest.param(pth_file, "a path configuration file", id="pth"),
    pytest.param(conftest_file, "a pytest plug-in", id="conftest.py"),
    pytest.param(sourceless_pyc, "bytecode beside the modules", id="sourceless-pyc"),
    pytest.param(other_module, "a Python file orlgen does not write", id="other-py"),
    pytest.param(bom_before_the_header, "hand-edited: a byte-order mark (BOM) before orlgen's header", id="bom"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("plant", "cause"), DIRECTORY_TABLE)
def test_check_fails_on_anything_that_changes_the_import(project: Path, plant: Callable[[Path], Path], cause: str):
    gen = project / "generated"
    planted = plant(gen)
    result = orlgen("check", gen)
    assert result.returncode == 1, result.stdout
    assert any(line.startswith(f"{planted}: {cause}") for line in result.stdout.splitlines()), result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(("plant", "cause"), DIRECTORY_TABLE[:-1])
def test_generate_refuses_what_check_fails_on(project: Path, plant: Callable[[Path], Path], cause: str):
    """generate cannot repair a file it does not own: it refuses, naming the same file and cause."""
    gen = project / "generated"
    planted = plant(gen)
    before = files_of(gen)
    assert_one_line(orlgen("generate", gen), f"{planted}: {cause}")
    assert files_of(gen) == before


@pytest.mark.slow
def test_a_mixture_missing_a_member_gets_one_verdict_from_every_command(project: Path, echo_url: str):
    """generate refuses, check fails with the same cause (not "an orphan generate removes"), and
    a capture into the directory writes its env but warns with the same cause."""
    (project / "pyproject.toml").write_text(
        ROOT_CONFIG.format(extra="").replace('["echo", "helpdesk"]', '["echo", "helpdesks"]')
    )
    gen = project / "generated"
    cause = "mixture 'support_mix' names 'helpdesks', which has no snapshot in"
    assert_one_line(orlgen("generate", gen), cause)
    checked = orlgen("check", gen)
    assert checked.returncode == 1 and problems(checked.stdout)["support_mix.py"].startswith(cause), checked.stdout
    (gen / "echo.py").unlink()  # the capture writes the member's module again
    captured = orlgen("snapshot", echo_url, "--out", gen, "--probes", "0")
    assert captured.returncode == 0, captured.stderr
    assert (gen / "echo.py").exists()
    assert f"orlgen: warning: {gen / 'support_mix.py'}: {cause}" in captured.stderr


def test_a_mixture_module_removed_from_the_config_and_bom_prefixed_fails_check(project: Path):
    (project / "pyproject.toml").write_text('[tool.orlgen]\nout = "generated"\n')
    module = project / "generated" / "support_mix.py"
    source = module.read_bytes()
    edited = source.replace(b"\nfrom orlgen.runtime import mix", b"\nimport os\nfrom orlgen.runtime import mix", 1)
    assert edited != source
    module.write_bytes(b"\xef\xbb\xbf" + edited)
    result = orlgen("check", project / "generated")
    assert result.returncode == 1
    assert problems(result.stdout)["support_mix.py"].startswith("a byte-order mark (BOM) before orlgen's header")


@pytest.mark.parametrize(
    ("out", "why"),
    [
        ("genеrated", "mixes scripts (Cyrillic, Latin)"),  # Cyrillic е
        ("generated\u200b", "invisible character"),
        ("ɡenerated", "looks like 'generated'"),  # Latin small script g: one script, but a look-alike
    ],
    ids=["cyrillic-e", "zero-width-space", "look-alike-of-a-sibling"],
)
def test_an_out_that_displays_as_another_path_is_refused(project: Path, out: str, why: str):
    """A look-alike copy of the files passes check while the real generated/ is edited."""
    shutil.copytree(project / "generated", project / out)
    hand_edit(project / "generated" / "echo.py")
    (project / "pyproject.toml").write_text(ROOT_CONFIG.format(extra="").replace('"generated"', json.dumps(out)))
    assert_one_line(run("check", cwd=project), "[tool.orlgen] out", why)


def test_checks_report_shows_invisible_characters_as_escapes(project: Path):
    """A bidi control in a hand edit, or in a planted file's name, would make the CI log show
    other text than the pull request holds."""
    gen = project / "generated"
    module = gen / "echo.py"
    module.write_text(
        module.read_text().replace(
            "        return self._call_tool(", "        x = 1  # \u202e\u200b\n        return self._call_tool(", 1
        )
    )
    (gen / "evil\u202e.py").write_text("X = 1\n")
    result = orlgen("check", gen)
    assert result.returncode == 1
    assert "\\u202e" in result.stdout and "evil\\u202e.py: a Python file" in result.stdout
    assert not [char for char in result.stdout if char != "\n" and lookalike.invisible(char)]


# --------------------------------------------------------------------------------------------
# item 3: a cache that cannot lie
# --------------------------------------------------------------------------------------------


def edit_override(project: Path) -> None:
    template = project / "tpl" / "tool_method.py.jinja"
    template.write_text(
        template.read_text().replace("return self._call_tool(", "print(1)\n        return self._call_tool(")
    )


def edit_included_file(project: Path) -> None:
    """A file not named *.jinja that module.py.jinja includes, edited after a warm check: the
    key once covered only *.jinja, so the cache said current. Now the include is refused, and
    every file of the templates directory is in the key anyway."""
    (project / "tpl" / "extra.txt").write_text("# extra\n")
    module = project / "tpl" / "module.py.jinja"
    module.write_text(module.read_text() + '{% include "extra.txt" %}\n')
    orlgen("generate", project / "generated")  # refused now; once, it wrote the modules
    orlgen("check", "--cache", project / "generated")
    (project / "tpl" / "extra.txt").write_text("import os\n")


# Edits of owned files (body, header, BOM) are test_check.py's warm-cache cases.
CACHE_TABLE: dict[str, Callable[[Path], object]] = {
    "override-template": edit_override,
    "included-file": edit_included_file,
    "template-to-dev-zero": lambda p: (
        (p / "tpl" / "module.py.jinja").unlink(),
        (p / "tpl" / "module.py.jinja").symlink_to("/dev/zero"),
    ),
    "init-py": lambda p: init_file(p / "generated"),
    "unchecked-pyc": lambda p: unchecked_hash_pyc(p / "generated"),
}


@pytest.mark.slow
@pytest.mark.parametrize("tamper", list(CACHE_TABLE.values()), ids=list(CACHE_TABLE))
def test_check_with_a_warm_cache_gives_the_same_verdict(project: Path, tamper: Callable[[Path], object]):
    assert orlgen("check", "--cache", project / "generated").returncode == 0  # warm
    tamper(project)
    plain, cached = orlgen("check", project / "generated"), orlgen("check", "--cache", project / "generated")
    assert plain.returncode in (1, 2), plain
    assert (cached.returncode, cached.stdout, cached.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def forge_verdicts(project: Path, directory: Path) -> None:
    """Entries named the way the cache named them when its key was computable offline (a sha256
    of public facts), for the files as the PR leaves them."""
    from orlgen.project import Project

    found = Project.find([project / "generated"])
    digest = cache._environment_digest(found.config.templates)
    directory.mkdir(parents=True, exist_ok=True)
    for job in found._jobs({path: load(path) for path in found.snapshot_paths([found.out])}):
        actual = job.path.read_bytes()
        facts = [digest, job.path.name, list(job.inputs), hashlib.sha256(actual).hexdigest()]
        (directory / hashlib.sha256(json.dumps(facts).encode()).hexdigest()).touch()
    (directory / "key").write_bytes(os.urandom(32))  # as git would check it out: 0644
    (directory / "key").chmod(0o644)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["relative-xdg-cache-home", "absolute-into-the-project"])
def test_a_verdict_committed_to_the_repository_is_not_trusted(
    project: Path, monkeypatch: pytest.MonkeyPatch, where: str
):
    hand_edit(project / "generated" / "echo.py")
    forge_verdicts(project, project / ".cache" / "orlgen" / "check")
    xdg = ".cache" if where == "relative-xdg-cache-home" else str(project / ".cache")
    result = run("check", "--cache", cwd=project, env={"XDG_CACHE_HOME": xdg})
    assert result.returncode == 1 and "generated/echo.py: hand-edited" in result.stdout, result.stdout


def test_the_cache_key_is_a_private_file_outside_the_repository(project: Path, tmp_path: Path):
    assert orlgen("check", "--cache", project / "generated").returncode == 0
    key = tmp_path / "cache" / "orlgen" / "check" / "key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_bytes()) == 32
    assert (tmp_path / "cache" / "orlgen" / "check").stat().st_mode & 0o077 == 0
