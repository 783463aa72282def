"""The output directory's plan: what every file in it is, decided once for `snapshot`, `generate`
and `check`.

`check` proves what `import <out>.<module>` runs only if it owns the whole directory: a file
that no snapshot renders can still change what that import runs (a package folder or an
extension module wins over the `.py`; an `__init__.py` runs first; an unchecked-hash `.pyc` is
run without looking at the source, and a checked-hash one holds whatever code was compiled
into it) or what a type checker sees (a `.pyi` stub). So each entry
of the directory is one of:

- owned: a snapshot (its interface file and its tasks file), or a module one renders; `check`
  compares its bytes (`orlgen.review.check`);
- an orphan: a module with orlgen's header that nothing renders any more, or a tasks file no
  snapshot records; `generate` removes it;
- a problem: anything that could change the import or its types, a partial mixture, a project
  config; no command fixes it, so `check` fails naming it and `generate`/`snapshot` refuse;
- inert: anything else (a README, data files, Python's cache when its code is the code of the
  checked source, which `check` recompiles and compares).

The directory is a namespace package: orlgen writes no `__init__.py`, so one found there is a
problem, not a file to compare.
"""

from __future__ import annotations

import marshal
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from importlib.util import MAGIC_NUMBER, source_hash
from pathlib import Path
from types import CodeType

from orlgen.render import header
from orlgen.snapshot.model import SUFFIX, TASKS_SUFFIX

_BOM = b"\xef\xbb\xbf"
_CACHED = re.compile(r"(?P<module>[^.]+)\.(?P<tag>[^.]+)(?:\.opt-(?P<opt>[12]))?\.pyc")
_MAX_PYC = 64 << 20  # a generated module's bytecode is well under a megabyte
_DELETE = "delete the __pycache__ folder (Python rebuilds it)"
_EXTENSIONS = tuple(sorted({*EXTENSION_SUFFIXES, ".so", ".pyd"}))


@dataclass(frozen=True)
class Problem:
    path: Path
    cause: str

    def __str__(self) -> str:
        return f"{self.path}: {self.cause}"


@dataclass(frozen=True)
class Layout:
    orphans: tuple[Path, ...] = ()  # orlgen's modules that nothing renders: `generate` removes them
    problems: tuple[Problem, ...] = ()  # what no command repairs: `check` fails, writes are refused
    partial: tuple[Problem, ...] = ()  # mixtures missing a member: a problem too, worded for each command


def plan(
    directories: Iterable[Path],
    snapshots: Mapping[Path, str],
    owned: Iterable[Path],
    mixtures: Mapping[str, Sequence[str]],
    out: Path,
    keep: Iterable[Path] = (),
) -> Layout:
    """The plan of each directory, given the snapshot files found in them (path → module name),
    every file the render owns, the config's mixtures and the output directory they are of, and
    modules to keep although nothing renders them (those of a snapshot that could not be read,
    which is reported itself)."""
    owned, keep = set(owned), set(keep)
    orphans: list[Path] = []
    problems: list[Problem] = []
    partial: list[Problem] = []
    for directory in sorted(set(directories)):
        present = {name for path, name in snapshots.items() if path.parent == directory}
        missing = _partial_mixtures(directory, present, mixtures) if directory.resolve() == out.resolve() else []
        partial += missing
        found_orphans, found = _scan(directory, owned, keep | {problem.path for problem in missing})
        orphans += found_orphans
        problems += found
    return Layout(tuple(orphans), tuple(problems), tuple(partial))


def _partial_mixtures(directory: Path, present: set[str], mixtures: Mapping[str, Sequence[str]]) -> list[Problem]:
    """A mixture of the config that has some members in the directory but not all (a typo, a
    removed snapshot) would otherwise vanish without a word, its module removed as an orphan."""
    found = []
    for mixture, members in sorted(mixtures.items()):
        missing = sorted(set(members) - present)
        if missing and present & set(members):
            found.append(
                Problem(
                    directory / f"{mixture}.py",
                    f"mixture {mixture!r} names {missing[0]!r}, which has no snapshot in {directory}: "
                    "capture it or fix [tool.orlgen] mixtures",
                )
            )
    return found


def _scan(directory: Path, owned: set[Path], keep: set[Path]) -> tuple[list[Path], list[Problem]]:
    if not directory.is_dir():
        return [], []
    orphans, problems = [], []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            path = directory / entry.name
            if path in owned or path in keep or entry.name.endswith(SUFFIX):
                continue  # compared byte for byte, or reported as an invalid snapshot
            if _is_orphan(entry):
                orphans.append(path)
                continue
            cause = _entry_problem(entry)
            if cause is not None:
                problems.append(Problem(path, cause))
            elif entry.name == "__pycache__":
                problems += _pycache_problems(path)
    return orphans, problems


def _is_orphan(entry: os.DirEntry[str]) -> bool:
    if not entry.is_file(follow_symlinks=False):
        return False
    generated = entry.name.endswith(header.GENERATED_SUFFIXES) and header.is_generated(Path(entry.path))
    return entry.name.endswith(TASKS_SUFFIX) or generated


def _entry_problem(entry: os.DirEntry[str]) -> str | None:
    """Why this entry could change what importing the directory's modules runs, or None."""
    name = entry.name
    if entry.is_symlink() or not (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)):
        return _LINK if _importable(name) or name in ("__pycache__", "pyproject.toml") else None
    if entry.is_dir(follow_symlinks=False):
        if name == "__pycache__":
            return None
        return _PACKAGE if name.isidentifier() else None
    if name == "pyproject.toml":
        return _PYPROJECT
    if name.endswith((".py", ".pyw")):
        return _source_problem(Path(entry.path))
    if name.endswith(".pyi"):
        return "a type stub: mypy and editors read its signatures instead of the generated module's"
    if name.endswith(".pth"):
        return "a path configuration file: Python runs its import lines at start-up where this is a site directory"
    if name.endswith((".pyc", ".pyo")):
        return "bytecode beside the modules: Python imports it as a module without any source to check it against"
    if name.endswith(_EXTENSIONS):
        return "a compiled extension module: Python imports it in place of the generated module of that name"
    return None


def _importable(name: str) -> bool:
    stem = name.split(".", 1)[0]
    return stem.isidentifier() or name.endswith((".py", ".pyw", ".pyi", ".pth", ".pyc", ".pyo", *_EXTENSIONS))


def _source_problem(path: Path) -> str:
    """A Python file orlgen did not write, worded by what it is."""
    with path.open("rb") as handle:
        start = handle.read(4096)
    at = start.find(header.PREFIX.encode())
    if at > 0:
        what = "a byte-order mark (BOM)" if start.startswith(_BOM) and at == len(_BOM) else f"{at} byte(s)"
        return f"{what} before orlgen's header: orlgen did not write this file as it is, and no snapshot renders it"
    if path.name == "__init__.py":
        return "a package file orlgen does not write: Python runs it before any module of this directory"
    if path.name == "conftest.py":
        return "a pytest plug-in orlgen does not write: pytest runs it when it collects tests here"
    return "a Python file orlgen does not write: importing it, or this directory's modules, can run it"


def _pycache_problems(directory: Path) -> list[Problem]:
    """Python's cache is trusted only as far as `check` proves it: a `.pyc` Python would load for
    a module beside it must hold exactly the code of that module's source (`_bytecode_problem`).
    Python's own checks do not prove that: a timestamp `.pyc` is matched by the source's mtime
    and size, a checked-hash one by a hash of the source, an unchecked-hash one by nothing, and
    none of them looks at the code it holds."""
    problems = []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            if not entry.name.endswith(".pyc"):
                continue
            path = directory / entry.name
            cause = _LINK if not entry.is_file(follow_symlinks=False) else _bytecode_problem(path)
            if cause is not None:
                problems.append(Problem(path, cause))
    return problems


def _bytecode_problem(path: Path) -> str | None:
    """Why Python could run other code from this cached `.pyc` than its source holds, or None.

    Python loads `__pycache__/<m>.<tag>[.opt-N].pyc` for `<m>.py` beside the cache when the
    interpreter's tag is in its name and its header passes (`_used_as`); otherwise it compiles
    the source, and the file is inert (a stale cache after `generate`). Bytecode of this
    interpreter is recompiled from the source and compared byte for byte (`_is_code_of`); another
    interpreter's cannot be, so it is a problem (deleting `__pycache__` is always safe)."""
    found = _CACHED.fullmatch(path.name)
    source_path = path.parent.parent / f"{found['module']}.py" if found else path
    if found is None or not source_path.is_file():
        return None  # a name Python never loads, or no source beside it: Python ignores it
    with path.open("rb") as handle:
        data = handle.read(_MAX_PYC + 1)
    if len(data) > _MAX_PYC:
        return f"bytecode larger than {_MAX_PYC} bytes; {_DELETE}"
    ours = found["tag"] == sys.implementation.cache_tag
    if ours and data[:4] != MAGIC_NUMBER:
        return None  # Python refuses it and compiles the source
    source = source_path.read_bytes()
    kind = _used_as(data, source_path, source if ours else None)
    if kind is None:
        return None
    if not ours:
        return f"{kind} bytecode for another interpreter ({found['tag']}): orlgen cannot compare it with its source; {_DELETE}"
    if _is_code_of(_unmarshal(data[16:]), source, int(found["opt"] or 0)):
        return None
    return f"{kind} bytecode that is not the code of its source: Python runs it in place of the module; {_DELETE}"


def _used_as(data: bytes, source_path: Path, source: bytes | None) -> str | None:
    """The kind of a `.pyc` Python would run for this source, as its loader decides (PEP 552,
    `SourceLoader.get_code`), or None when Python would compile the source instead: unknown
    flags, a timestamp pyc whose mtime and size are not the source's, a checked-hash one whose
    hash is not. An unchecked-hash pyc is always run; so is a checked-hash one when its hash
    cannot be computed here (`source` None: another interpreter keys the hash differently)."""
    if len(data) < 16:
        return None
    flags = int.from_bytes(data[4:8], "little")
    if flags == 0b00:
        info = source_path.stat()
        stamp = (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + (info.st_size & 0xFFFFFFFF).to_bytes(
            4, "little"
        )
        return "timestamp" if data[8:16] == stamp else None
    if flags == 0b11:
        return "checked-hash" if source is None or data[8:16] == source_hash(source) else None
    return "unchecked-hash" if flags == 0b01 else None


def _unmarshal(data: bytes) -> object:
    try:
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None


def _compiled(source: bytes, filename: str, optimize: int) -> CodeType | None:
    """The source compiled as the import system compiles it (`SourceLoader.source_to_code`)."""
    try:
        return compile(source, filename, "exec", dont_inherit=True, optimize=optimize)
    except (SyntaxError, ValueError):
        return None


def _is_code_of(found: object, source: bytes, optimize: int) -> bool:
    """Whether `found` is, byte for byte, the code `source` compiles to. Code objects' `==` is
    not that: it skips `co_stacksize` (a pyc claiming one slot equals the real code, and the
    interpreter overruns its frames) and the inline caches. So the source is compiled under the
    file name the pyc records (the one field that legitimately differs: `py_compile`'s `dfile`,
    and import rewrites it anyway) and both are marshalled in this process: every field the pyc
    carries is compared, and marshal's reference flags, which follow reference counts rather
    than the code, are alike. The caches, which marshal writes as zeros, are compared apart."""
    if not isinstance(found, CodeType):
        return False
    expected = _compiled(source, found.co_filename, optimize)
    return expected is not None and marshal.dumps(found) == marshal.dumps(expected) and _same_caches(found, expected)


def _same_caches(found: CodeType, expected: CodeType) -> bool:
    """The instructions with their inline caches as loaded (`_co_code_adaptive`, CPython 3.11+;
    `co_code` shows the caches as zeros), in every nested code object: a cache entry the pyc
    sets is read by the specialising interpreter. Neither has run, so neither is specialised."""
    if _instructions(found) != _instructions(expected):
        return False
    inner = [(a, b) for a, b in zip(found.co_consts, expected.co_consts, strict=True) if isinstance(b, CodeType)]
    return all(isinstance(a, CodeType) and _same_caches(a, b) for a, b in inner)


def _instructions(code: CodeType) -> bytes:
    raw = getattr(code, "_co_code_adaptive", code.co_code)
    return raw if isinstance(raw, bytes) else code.co_code


_LINK = "a symbolic link or special file: what it points to is not the file orlgen writes, and Python follows it"
_PACKAGE = "a package folder: `import` finds it before a module of the same name, and it runs code orlgen did not write"
_PYPROJECT = (
    "a project config inside the output directory: orlgen reads only the project's own pyproject.toml, "
    "and refuses this one"
)
