"""Compare generated files on disk with what their snapshots render to, and name each cause.

Sound by construction: every file is re-rendered and compared byte for byte (sqlc's `diff`), so
a change to any byte that `generate` would not produce — body, header or a coding cookie — is
caught whatever the file says about itself. The header is read only to word the cause.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orlgen.render import header, lock
from orlgen.render.jobs import Job
from orlgen.review.cache import Verdicts
from orlgen.review.files import is_regular
from orlgen.snapshot.model import SUFFIX, TASKS_SUFFIX


@dataclass(frozen=True)
class Repair:
    """What mends a kind of finding, for check's summary: `what` follows a count of files."""

    what: str
    fix: str


GENERATE = Repair("generated file(s) out of date", "run `orlgen generate`")
RECAPTURE = Repair(
    "snapshot(s) invalid",
    "re-capture with `orlgen snapshot` (the exact command is in the module's docstring), or restore the file "
    "from version control",
)
# `generate` refuses to write while one of these stands, so running it first only fails.
FOREIGN = Repair(
    "file(s) orlgen did not write",
    "move them out of the output directory or delete them (a link: put the file it points to in its place); "
    "`orlgen generate` refuses to write beside them",
)
MIXTURE = Repair("mixture(s) missing a member", "capture the member, or fix [tool.orlgen] mixtures")
TRUST = Repair(
    "snapshot(s) connecting or sending secrets where pyproject.toml does not say",
    "review the target and secrets the change records; if meant, grant them in [tool.orlgen] envs",
)


@dataclass(frozen=True)
class Drift:
    path: Path
    cause: str
    actual: bytes | None = None  # on disk, when there is something to diff
    expected: bytes | None = None  # what generate would write
    repair: Repair = GENERATE


def summary(drift: Sequence[Drift]) -> str:
    """Check's last line: each repair the findings need, with how many files need it, in the order
    to apply them (`generate` comes last: it refuses while any other finding stands)."""
    counts = Counter(problem.repair for problem in drift)
    first = [f"{count} {repair.what}: {repair.fix}" for repair, count in counts.items() if repair != GENERATE]
    if GENERATE in counts:
        first.append(("then " if first else "") + f"{counts[GENERATE]} {GENERATE.what}: {GENERATE.fix}")
    return "; ".join(first)


def compare(expected: Sequence[Job], cache: Verdicts | None = None) -> list[Drift]:
    """The jobs whose file on disk is not byte-identical to their render, in path order.

    With a `cache`, a file whose exact bytes were already found current for exactly these
    render inputs is not rendered again; the verdict is the same either way."""
    found = (_compare(job, cache) for job in sorted(expected, key=lambda job: job.path))
    return [drift for drift in found if drift is not None]


def _compare(job: Job, cache: Verdicts | None) -> Drift | None:
    if not job.path.exists() and not job.path.is_symlink():
        return Drift(job.path, "missing: run `orlgen generate`")  # one line: a whole module as a diff says no more
    if not is_regular(job.path):
        return Drift(job.path, NOT_REGULAR, repair=FOREIGN)
    actual = job.path.read_bytes()
    if cache is not None and cache.current(job, actual):
        return None
    expected = job.render().encode()
    if actual == expected:
        if cache is not None:
            cache.remember(job, actual)
        return None
    if job.path.name.endswith(SUFFIX):
        return Drift(job.path, _FORMAT_1 if actual.startswith(_FORMAT_1_START) else _NOT_CANONICAL, actual, expected)
    if job.path.name.endswith(TASKS_SUFFIX):
        return Drift(job.path, tasks_cause(actual, expected), actual, expected)
    if job.path.name == lock.NAME:  # its versions are the installed ones (`Project.check` asked first)
        return Drift(job.path, _LOCK, actual, expected)
    return Drift(job.path, cause(actual, expected), actual, expected)


# A snapshot's content is sealed by its hash, but not its bytes: a reviewer reads the bytes.
_NOT_CANONICAL = (
    "not canonical: its content matches its sha256, but its bytes are not what orlgen writes "
    "(key order, spacing or escapes were edited); `orlgen generate` rewrites it"
)


_LOCK = (
    "not what orlgen writes for this project (hand-edited, or the trainer plugins pyproject.toml lists "
    "changed): `orlgen generate` rewrites it"
)


# How every format-1 snapshot orlgen wrote begins (canonical JSON: `format_version` sorts first).
_FORMAT_1_START = b'{\n  "format_version": 1,\n'
_FORMAT_1 = (
    "format 1 (its tasks inline): run `orlgen generate`, which rewrites it as format 2, its tasks "
    "in the .tasks.jsonl file beside it"
)


def tasks_cause(actual: bytes, expected: bytes) -> str:
    """Why a tasks file differs from the rows its snapshot holds: the first line (split on `\n`
    alone, as the one reader splits) that differs. A tasks file has no header to word it from."""
    line = _first_different_line(actual, expected, max(actual.count(b"\n"), expected.count(b"\n")) + 1)
    return f"not what orlgen writes from its snapshot: line {line} differs; `orlgen generate` rewrites it"


def cause(actual: bytes, expected: bytes) -> str:
    """Why `actual` differs from `expected`, worded from the headers of both.

    A header that is not exactly what orlgen writes, or a current header over a different body,
    is a hand edit, whatever hash the file claims. Only a well-formed header naming other
    versions or another snapshot reads as stale — and since a header can be edited, that
    cause says what the file claims, not what is proven."""
    found, wanted = header.parse(actual), header.parse(expected)
    assert wanted is not None, "orlgen writes a header it cannot parse"
    if found is None:
        before = actual.find(header.PREFIX.encode(), 0, 4096)
        if before > 0:
            what = (
                "a byte-order mark (BOM)" if actual.startswith(b"\xef\xbb\xbf") and before == 3 else f"{before} byte(s)"
            )
            return f"hand-edited: {what} before orlgen's header"
        line = _first_different_line(actual, expected, header.LINES)
        return f"hand-edited: header line {line} is not what orlgen writes"
    if found.versions() != wanted.versions():
        return (
            "stale: orlgen, datamodel-code-generator or black changed version (the header says "
            f"{found.orlgen}, {found.dcg}, {found.black}; this is {wanted.orlgen}, {wanted.dcg}, {wanted.black})"
        )
    if (found.trainer, found.written_for) != (wanted.trainer, wanted.written_for):
        said = f"trainer {found.trainer} ({found.written_for})" if found.trainer else "no trainer (an older orlgen)"
        return f"stale: the header names {said}; this is trainer {wanted.trainer} ({wanted.written_for})"
    if found.plugin != wanted.plugin:
        said, now = (f"plugin {each}" if each else "orlgen's built-in" for each in (found.plugin, wanted.plugin))
        return f"stale: the header names {said} for trainer {wanted.trainer}; this is {now}"
    if _shares_models(actual) != _shares_models(expected):
        moved = "out of it into" if _shares_models(expected) else "back into it from"
        return f"stale: the env's trainers changed, so its models move {moved} the env's models file"
    if (found.sources, found.sha256) != (wanted.sources, wanted.sha256):
        return (
            "stale: the snapshot changed since the module was generated (the header says "
            f"{found.sources} sha256 {found.sha256[:12]}…, now {wanted.sources} sha256 {wanted.sha256[:12]}…)"
        )
    return (
        "hand-edited (or rendered with other templates or another build of orlgen): the bytes differ from "
        "what `orlgen generate` renders from its snapshot"
    )


# How a trainer's module binds its env's models file (`templates/env_models.py.jinja`).
_MODELS_BINDING = re.compile(rb'= siblings\(__package__, __file__, "\w+_models"\)\n')


def _shares_models(data: bytes) -> bool:
    """Whether a module binds its models from the env's models file rather than holding them."""
    return _MODELS_BINDING.search(data) is not None


def _first_different_line(actual: bytes, expected: bytes, limit: int) -> int:
    pairs = zip(actual.split(b"\n")[:limit], expected.split(b"\n")[:limit], strict=False)
    return next((number for number, (a, b) in enumerate(pairs, 1) if a != b), limit)


NOT_REGULAR = "hand-edited: not a regular file (a symbolic link or a special file); orlgen writes regular files"
