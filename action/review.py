"""The orlgen GitHub Action's one step (action.yml): `orlgen check`, then, on a pull request, `orlgen
diff` of each changed snapshot against the base branch's, as the job summary (Markdown) and as
annotations on the snapshot files. Exit 1 when check fails or a change is breaking under the
project's `[tool.orlgen.diff]` rules, 2 when it cannot run (no base commit, an orlgen error).

A script apart from action.yml so that it runs anywhere (tests/test_action.py runs it in a
throwaway repository): it reads only environment variables, git and the `orlgen` on PATH.

- ORLGEN_BASE: the base commit of a pull request (empty: only `check` runs). Fetched (depth 1)
  from `origin` when the checkout lacks it.
- GITHUB_STEP_SUMMARY: the file the summary is appended to (absent: stdout).

Run from the project's directory (the one whose pyproject.toml has `[tool.orlgen]`). Every name
in the output comes from the pull request (file names) or the environment's server (orlgen
escapes its own): paths are escaped here before they reach Markdown or a workflow command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

SUFFIX = ".snapshot.json"
TASKS_SUFFIX = ".tasks.jsonl"
CHECK_LINES = 200  # of `orlgen check`'s report in the summary; the job log has all of it
# What Markdown or HTML would act on outside a code span (orlgen.review.diff escapes server text the same way).
MARKDOWN_PUNCTUATION = frozenset("\\`*_[]()|~<>&#!")


def main() -> int:
    summary: list[str] = ["## orlgen", ""]
    failed = _check(summary)
    base = os.environ.get("ORLGEN_BASE", "").strip()
    status = 1 if failed else 0
    if base:
        status = max(status, _review(base, summary))
    _write_summary(summary)
    return status


def _check(summary: list[str]) -> bool:
    """`orlgen check`: its report in the log, its verdict in the summary (and its report, fenced)."""
    result = _orlgen("check")
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode == 0:
        summary += ["`orlgen check`: every generated file is current.", ""]
        return False
    report = (result.stdout + result.stderr).splitlines()
    first = next((line for line in report if line.strip()), f"exit {result.returncode}")
    print(f"::error title=orlgen check::{_command_text(first)}")
    shown = report[:CHECK_LINES] + (
        [f"... {len(report) - CHECK_LINES} more lines in the job log"] * (len(report) > CHECK_LINES)
    )
    summary += [f"`orlgen check` failed (exit {result.returncode}):", "", *_fenced(shown), ""]
    return True


def _review(base: str, summary: list[str]) -> int:
    """Each snapshot the pull request adds, removes or changes under the project's `out`."""
    if not _has_commit(base):
        _git("fetch", "--quiet", "--no-tags", "--depth=1", "origin", base, check=False)
    if not _has_commit(base):
        print(f"::error title=orlgen diff::base commit {_command_text(base)} is not in this checkout")
        summary += [f"Base commit `{_markdown(base)}` is not in this checkout: no diff.", ""]
        return 2
    prefix = _git("rev-parse", "--show-prefix").strip()  # annotations name files from the repository's root
    changed = _changed_snapshots(base, _out_directory())
    summary += [f"### Environment changes against `{_markdown(base[:12])}`", ""]
    if not changed:
        summary += ["No snapshot changed.", ""]
        return 0
    status = 0
    with tempfile.TemporaryDirectory(prefix=".orlgen-base-", dir=".") as scratch:
        # Inside the project, so that `orlgen diff OLD` reads this project's pyproject.toml (its rules).
        for state, path in changed:
            shown = _markdown(path)
            file = _property(prefix + path)
            if state == "A":
                print(f"::notice file={file},title=orlgen::new environment snapshot")
                summary += [f"- {shown}: new environment snapshot.", ""]
            elif state == "D":
                print(f"::warning file={file},title=orlgen::environment snapshot removed")
                summary += [f"- {shown}: removed (modules that import it are gone too).", ""]
            else:
                old = _base_copy(base, path, Path(scratch))
                status = max(status, _diff(old, path, file, shown, summary))
    return status


def _diff(old: Path, path: str, file: str, shown: str, summary: list[str]) -> int:
    """One snapshot's `orlgen diff`: the Markdown table in the summary, each change an annotation
    on the file (orlgen's own escaped message, with `file=` added)."""
    table = _orlgen("diff", str(old), "--against", path, "--format", "markdown")
    if table.returncode not in (0, 1):
        message = table.stderr.strip().splitlines()[-1] if table.stderr.strip() else f"exit {table.returncode}"
        print(f"::error file={file},title=orlgen diff::{_command_text(message)}")
        summary += [f"- {shown}: `orlgen diff` failed:", "", *_fenced([message]), ""]
        return 2
    annotations = _orlgen("diff", str(old), "--against", path, "--format", "github")
    for line in annotations.stdout.splitlines():
        sys.stdout.write(re.sub(r"^::(error|warning|notice) ", rf"::\1 file={file},", line, count=1) + "\n")
    verdict = "breaking" if table.returncode == 1 else "not breaking"
    summary += [f"#### {shown}: {verdict}", "", table.stdout.rstrip("\n"), ""]
    return table.returncode


def _changed_snapshots(base: str, out: str) -> list[tuple[str, str]]:
    """(A|D|M, path) of each snapshot that differs between `base` and HEAD, its path relative to
    this directory; a rename is a removal and an addition: a snapshot's file name is its module's."""
    listing = _git("diff", "--name-status", "--no-renames", "--relative", "-z", base, "HEAD", "--", out)
    fields = listing.split("\0")[:-1]
    pairs = zip(fields[0::2], fields[1::2], strict=True)
    return [(state[0], path) for state, path in pairs if path.endswith(SUFFIX) and state[0] in "ADM"]


def _base_copy(base: str, path: str, scratch: Path) -> Path:
    """The base commit's interface file (and tasks file, when it had one) under their own names:
    `orlgen diff` finds a snapshot's tasks file beside it by name, and compares stored tasks only
    when both sides have theirs."""
    old = scratch / Path(path).name
    old.write_bytes(_git_bytes("show", f"{base}:./{path}"))  # ./: relative to this directory
    tasks = path[: -len(SUFFIX)] + TASKS_SUFFIX
    found = _git_bytes("show", f"{base}:./{tasks}", check=False)
    if found is not None:
        (scratch / Path(tasks).name).write_bytes(found)
    return old


def _out_directory() -> str:
    """`[tool.orlgen] out` of the project here (orlgen's default: generated)."""
    with open("pyproject.toml", "rb") as file:
        return str(tomllib.load(file).get("tool", {}).get("orlgen", {}).get("out", "generated"))


def _has_commit(revision: str) -> bool:
    return _git_bytes("cat-file", "-e", f"{revision}^{{commit}}", check=False) is not None


def _orlgen(*args: str) -> subprocess.CompletedProcess[str]:
    command = shutil.which("orlgen")
    if command is None:
        raise SystemExit("orlgen-action: no `orlgen` on PATH")
    return subprocess.run([command, *args], capture_output=True, text=True)


def _git(*args: str, check: bool = True) -> str:
    found = _git_bytes(*args, check=check)
    return "" if found is None else found.decode()


def _git_bytes(*args: str, check: bool = True) -> bytes | None:
    """git's stdout, or None when it failed and `check` is off."""
    result = subprocess.run(["git", *args], capture_output=True)
    if result.returncode == 0:
        return result.stdout
    if check:
        raise SystemExit(f"orlgen-action: git {' '.join(args)}: {result.stderr.decode(errors='replace').strip()}")
    return None


def _markdown(text: str) -> str:
    """Text as inert Markdown: printable, and every character Markdown or HTML acts on escaped."""
    text = "".join("\\" + char if char in MARKDOWN_PUNCTUATION else char for char in text)
    return "".join(char if char.isprintable() else f"\\u{ord(char):04x}" for char in text)


def _fenced(lines: list[str]) -> list[str]:
    """A code block no line can close: its fence is longer than any backtick run inside."""
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *lines, fence]


def _command_text(text: str) -> str:
    """A workflow command's message: nothing in it can end the line or start another command."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value (`file=`): its separators escaped too."""
    return _command_text(text).replace(":", "%3A").replace(",", "%2C")


def _write_summary(lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        sys.stdout.write(text)
        return
    with open(target, "a", encoding="utf-8") as summary:
        summary.write(text)


if __name__ == "__main__":
    sys.exit(main())
