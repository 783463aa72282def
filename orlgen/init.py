"""`orlgen init`: set a repository up for orlgen's review workflow, changing no line a user wrote.

Three files, each only added to: `[tool.orlgen]` in `pyproject.toml` (created if absent), an
`orlgen check` hook in `.pre-commit-config.yaml`, and `.gitattributes` lines that collapse the
stored tasks in GitHub's diffs. Running it again changes nothing. An addition is checked by
parsing the file after it: when appending cannot add it without changing what the file already
says, the file is left alone and the line tells the user what to add by hand. A symbolic link (or
special file) in place of one of them is refused, and nothing is written.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from orlgen.config import PYPROJECT
from orlgen.disk import write_atomic
from orlgen.errors import OrlgenError
from orlgen.review.files import is_regular
from orlgen.runtime.errors import first_line
from orlgen.snapshot.model import TASKS_SUFFIX

PRE_COMMIT = ".pre-commit-config.yaml"
GITATTRIBUTES = ".gitattributes"
HOOK_ID = "orlgen-check"
# The README's hook: `orlgen check` as installed in the project (the versions that generated the
# modules), run when a snapshot, tasks file, module, template or the config changes.
HOOK = f"""\
- repo: local
  hooks:
    - id: {HOOK_ID}
      name: orlgen check
      entry: orlgen check
      language: system
      pass_filenames: false
      files: (\\.snapshot\\.json|\\.tasks\\.jsonl|\\.py|\\.jinja|pyproject\\.toml)$
"""


class InitError(OrlgenError):
    """A file `init` must read is not what it claims to be (invalid TOML or YAML)."""


@dataclass(frozen=True)
class Step:
    path: Path
    outcome: str  # "wrote", "added to", "unchanged", "skipped"
    why: str
    text: str | None = None  # the file's new content, when there is one

    def line(self) -> str:
        return f"{self.outcome} {self.path}: {self.why}"


def init(root: Path, out: str = "generated") -> list[Step]:
    """Set up the repository in `root`. Every file is read and its addition checked first, then
    all are written (each temp-then-rename): a file init cannot read leaves every file as it was."""
    for name in (PYPROJECT, PRE_COMMIT, GITATTRIBUTES):
        _refuse_unless_regular(root / name)
    steps = [_pyproject(root, out), _pre_commit(root), _gitattributes(root)]
    for step in steps:
        if step.text is not None:
            write_atomic(step.path, step.text.encode())
    return steps


def _refuse_unless_regular(path: Path) -> None:
    """A file init adds to must be a regular file, or absent: through a symbolic link it would
    read a file outside the repository and replace the link with that file's content (a special
    file could block the read)."""
    if (path.exists() or path.is_symlink()) and not is_regular(path):
        raise InitError(f"{path}: refused: a symbolic link or special file, not a regular file; nothing was written")


def _pyproject(root: Path, out: str) -> Step:
    path = root / PYPROJECT
    # A JSON string without ASCII escapes is a TOML basic string: any `--out` stays one value.
    value = json.dumps(out, ensure_ascii=False)
    table = f"[tool.orlgen]\nout = {value}  # snapshots and generated modules; add [[tool.orlgen.envs]] entries\n"
    if not path.exists():
        if not _only_orlgen_added({}, table):
            raise InitError(f"--out {out!r} cannot be written into {PYPROJECT}")
        return Step(path, "wrote", "a project config", table)
    text = path.read_text(encoding="utf-8")
    before = _toml(path, text)
    if "orlgen" in before.get("tool", {}):
        return Step(path, "unchanged", "it has [tool.orlgen]")
    after_text = _appended(text, table)
    if not _only_orlgen_added(before, after_text):
        return Step(path, "skipped", f"[tool.orlgen] cannot be appended to it as is; add by hand: {first_line(table)}")
    return Step(path, "added to", "[tool.orlgen]", after_text)


def _only_orlgen_added(before: dict[str, Any], after_text: str) -> bool:
    """`after_text` parses, holds `[tool.orlgen]`, and says everything else `before` said."""
    try:
        after = tomllib.loads(after_text)
    except tomllib.TOMLDecodeError:  # e.g. `tool` is an inline table: it cannot gain a table
        return False
    tool = dict(after.get("tool", {}))
    if tool.pop("orlgen", None) is None:
        return False
    rest = {**after, "tool": tool} if tool or "tool" in before else {k: v for k, v in after.items() if k != "tool"}
    return rest == before


def _pre_commit(root: Path) -> Step:
    path = root / PRE_COMMIT
    hook = HOOK
    if not path.exists():
        return Step(path, "wrote", f"a `{HOOK_ID}` hook (repo: local)", "repos:\n" + _indented(hook, "  "))
    text = path.read_text(encoding="utf-8")
    before = _yaml(path, text)
    repos = before.get("repos") if isinstance(before, dict) else None
    if isinstance(repos, list) and any(
        isinstance(repo, dict) and any(h.get("id") == HOOK_ID for h in repo.get("hooks") or [] if isinstance(h, dict))
        for repo in repos
    ):
        return Step(path, "unchanged", f"it has the `{HOOK_ID}` hook")
    entry = yaml.safe_load(hook)[0]
    for indent in ("  ", ""):  # the two ways `repos:` lists are written
        after_text = _appended(text, _indented(hook, indent))
        try:
            after = yaml.safe_load(after_text)
        except yaml.YAMLError:
            continue
        if isinstance(repos, list) and isinstance(after, dict) and after.get("repos") == [*repos, entry]:
            if {k: v for k, v in after.items() if k != "repos"} == {k: v for k, v in before.items() if k != "repos"}:
                return Step(path, "added to", f"the `{HOOK_ID}` hook", after_text)
    return Step(path, "skipped", f"the hook cannot be appended to it as is; add under `repos:` by hand:\n{hook}")


def _gitattributes(root: Path) -> Step:
    path = root / GITATTRIBUTES
    pattern = f"*{TASKS_SUFFIX}"
    line = f"{pattern} linguist-generated=true\n"
    why = "stored tasks collapsed in GitHub diffs (modules and interfaces stay shown for review)"
    if not path.exists():
        return Step(path, "wrote", why, line)
    text = path.read_text(encoding="utf-8")
    if any(existing.split()[:1] == [pattern] for existing in text.splitlines()):
        return Step(path, "unchanged", f"it has a line for {pattern}")
    return Step(path, "added to", why, _appended(text, line))


def _indented(block: str, indent: str) -> str:
    return "".join(indent + line if line.strip() else line for line in block.splitlines(keepends=True))


def _appended(text: str, addition: str) -> str:
    """`text` with `addition` after it, on a line of its own, a blank line between."""
    if not text:
        return addition
    return text + ("" if text.endswith("\n") else "\n") + "\n" + addition


def _toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InitError(f"{path}: not valid TOML ({exc}); nothing was written") from None


def _yaml(path: Path, text: str) -> Any:
    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise InitError(f"{path}: not valid YAML ({first_line(str(exc))}); nothing was written") from None
