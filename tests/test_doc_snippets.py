"""Every Python snippet in README.md and docs/ runs as written, or says why it cannot.

A block is run in a fresh namespace from the repository root, with only what a CPU test cannot
have swapped, as in tests/test_quickstart.py (which runs the README's quickstart itself): the
model (the offline tiny Qwen3 for `Qwen/Qwen3-0.6B`) and the size of each `GRPOConfig` (one step,
short completions, nothing saved; the block's own settings kept, but `max_steps`). A block marked
`<!-- snippet: excerpt of PATH -->` is a piece of a checked-in file and must appear in it as is; one
marked `<!-- snippet: illustrative (why) -->` is not run, and there may be few of those.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.support.models.tiny_qwen3 import tiny_qwen3_dir
from tests.support.modules import REPO
from tests.support.training import ONE_STEP
from tests.test_quickstart import quickstart

PAGES = ["README.md", *sorted(str(path.relative_to(REPO)) for path in (REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:<!-- snippet: (?P<mark>[^\n]*?) -->\n)?```python\n(?P<code>.*?)```", re.S)
MAX_ILLUSTRATIVE = 5


def snippets() -> list[tuple[str, str, str]]:
    """(page:line, marker or "", code) of every Python block."""
    found = []
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start("code"))
            found.append((f"{page}:{line}", match.group("mark") or "", match.group("code")))
    return found


SNIPPETS = snippets()
RUN = [(where, code) for where, mark, code in SNIPPETS if not mark and code != quickstart()]


def test_few_snippets_are_only_illustrative_and_each_says_why():
    illustrative = [mark for _, mark, _ in SNIPPETS if mark.startswith("illustrative")]
    assert len(illustrative) <= MAX_ILLUSTRATIVE, illustrative
    assert all(re.fullmatch(r"illustrative \(.{20,}\)", mark) for mark in illustrative), illustrative
    other = [mark for _, mark, _ in SNIPPETS if mark and not mark.startswith(("illustrative", "excerpt of "))]
    assert other == []


@pytest.mark.parametrize(("where", "mark", "code"), [s for s in SNIPPETS if s[1].startswith("excerpt of ")])
def test_an_excerpt_is_what_the_file_holds(where, mark, code):
    source = (REPO / mark.removeprefix("excerpt of ")).read_text()
    assert textwrap.indent(code, "    ") in source or code in source, f"{where} is not in {mark}"


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
@pytest.mark.parametrize(("where", "code"), RUN, ids=[where for where, _ in RUN])
def test_the_snippet_runs_as_written(where, code, tmp_path, monkeypatch):
    import trl

    real = trl.GRPOConfig

    def one_step(**given):
        settings = {**ONE_STEP, "max_completion_length": 8, "output_dir": str(tmp_path), **given, "max_steps": 1}
        settings["per_device_train_batch_size"] = settings["num_generations"]  # one group a step
        return real(**settings)

    for name in [name for name in os.environ if name.startswith("ORLGEN_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(trl, "GRPOConfig", one_step)
    monkeypatch.chdir(REPO)
    code = code.replace('model="Qwen/Qwen3-0.6B"', f"model={str(tiny_qwen3_dir())!r}")
    scope: dict = {}
    exec(compile(code, where, "exec"), scope)  # a local server's log goes with the process (runtime.local)
    if "trainer.train()" in code:
        assert scope["trainer"].state.global_step == 1


def _readme_lint_config() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return next(block for block in re.findall(r"```toml\n(.*?)```", readme, re.S) if "force-exclude" in block)


@pytest.mark.slow
def test_a_project_with_stricter_ruff_settings_lints_clean_with_the_readme_config(tmp_path):
    """A user's common settings (`line-length = 88`, `E`) flag generated modules; the README's
    config leaves them out, for `ruff check .` and for a hook that names the files."""
    shutil.copytree(REPO / "generated", tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "train.py").write_text("from generated.echo import EchoEnv\n\nprint(EchoEnv)\n")
    strict = '[tool.ruff]\nline-length = 88\n\n[tool.ruff.lint]\nextend-select = ["E"]\n'
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache"]
    (tmp_path / "pyproject.toml").write_text(strict)
    flagged = subprocess.run([*ruff, "."], capture_output=True, text=True, cwd=tmp_path)
    assert flagged.returncode == 1 and "E501" in flagged.stdout  # what the README answers
    config = _readme_lint_config().replace("[tool.ruff]\n", strict.split("\n\n")[0] + "\n", 1)
    (tmp_path / "pyproject.toml").write_text(config + "\n" + strict.split("\n\n")[1])
    for paths in (["."], sorted(str(path) for path in (tmp_path / "generated").glob("*.py"))):
        linted = subprocess.run([*ruff, *paths], capture_output=True, text=True, cwd=tmp_path)
        assert linted.returncode == 0, linted.stdout + linted.stderr
