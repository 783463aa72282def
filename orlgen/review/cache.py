"""A speed cache for `orlgen check` and `generate` (on by default, `--no-cache`), kept outside
the repository.

An entry records one fact: "these exact bytes are what orlgen renders from these inputs". Its
name is an HMAC, under a per-machine secret key, of the file's bytes on disk, its path name, its
render inputs (kind, name and each snapshot's sha256, which `snapshot.load` has verified
against the content) and everything else that decides the render: Python's version, the
versions of the packages the render runs, the bytes of orlgen's own source and templates, and
every file of the project's templates directory (not only `*.jinja`: the names of the others,
their kinds and bytes too). Only "current" verdicts are stored, so a miss simply renders; an
entry cannot make a changed file pass, because any changed byte gives another name.

What it trusts: its own directory and key, which a pull request cannot write. The key is 32
random bytes in `key`, created 0600 in a 0700 directory; a key file anyone else can read or
write (git checks files out 0644 or 0755), a cache inside the project, or a relative
`XDG_CACHE_HOME` (which the XDG spec says to ignore) means no cache: `check` renders everything.
Every read is bounded, and a link or special file in the templates directory is recorded as
such, never followed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from orlgen.render.jobs import Job
from orlgen.render.sandbox import MAX_BYTES

# The installed packages a render and its verification run through (`generate` skips both for a
# file held current); their versions are part of every key.
_RENDER_PACKAGES = (
    "datamodel-code-generator",
    "black",
    "jinja2",
    "pydantic",
    "pydantic-core",
    "genson",
    "transformers",
)


def default_directory() -> Path:
    """`$XDG_CACHE_HOME/orlgen/check`, or `~/.cache/orlgen/check`: a relative `XDG_CACHE_HOME`
    is ignored, as the XDG spec says (it would put the cache in the working directory)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "orlgen" / "check"


def machine_key() -> bytes | None:
    """This machine's (and user's) secret, shared by `check`'s verdicts and `orlgen eval`'s run
    seals: something a pull request or a copied directory cannot compute."""
    return _key_file(default_directory())


class Verdicts:
    """ "Current" verdicts of `check`, one empty file per verdict, named by its key."""

    def __init__(self, directory: Path, key: bytes, templates: Path | None) -> None:
        self._directory = directory
        self._secret = key
        self._environment = _environment_digest(templates)

    @classmethod
    def for_project(cls, root: Path, templates: Path | None) -> Verdicts | None:
        """The machine's cache for a project, or None when it cannot be trusted or created."""
        directory = default_directory()
        if directory.resolve().is_relative_to(root.resolve()):
            return None  # a pull request controls every file of the project
        key = _key_file(directory)
        return None if key is None else cls(directory, key, templates)

    def current(self, job: Job, actual: bytes) -> bool:
        return (self._directory / self._key(job, actual)).exists()

    def remember(self, job: Job, actual: bytes) -> None:
        """Record a verdict; a cache that cannot be written only costs speed."""
        try:
            (self._directory / self._key(job, actual)).touch()
        except OSError:
            pass

    def _key(self, job: Job, actual: bytes) -> str:
        facts = [self._environment, job.path.name, list(job.inputs), hashlib.sha256(actual).hexdigest()]
        return hmac.new(self._secret, json.dumps(facts).encode(), hashlib.sha256).hexdigest()


def _key_file(directory: Path) -> bytes | None:
    """The cache's secret: created once, 0600, in a 0700 directory; None when the file is not
    exactly that (another user's, readable by others, a link) or cannot be made."""
    path = directory / "key"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            key = handle.read(33)
    except OSError:
        return None
    trusted = stat.S_ISREG(info.st_mode) and info.st_mode & 0o077 == 0 and info.st_uid == os.getuid()
    return key if trusted and len(key) == 32 else None


def _environment_digest(templates: Path | None) -> str:
    """Everything but the snapshots that decides generated bytes, as one digest. The project's
    templates are read on every call: they may change while a process lives (a test, an editor)."""
    digest = hashlib.sha256(_installed_digest().encode())
    for name, data in _directory_files(templates):
        digest.update(f"override {name!r} {len(data)}\n".encode() + data)
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _installed_digest() -> str:
    """Python, the render's packages, orlgen's own source and every trainer's packaged templates
    (TRL's in `orlgen/templates`, a link to `templates/` in a source checkout; the others beside
    their trainer's code)."""
    digest = hashlib.sha256(json.dumps([sys.version, [_version(name) for name in _RENDER_PACKAGES]]).encode())
    package = Path(__file__).resolve().parent.parent  # all of orlgen
    templates = [*(package / "templates").resolve().glob("*.jinja"), *(package / "trainers").rglob("*.jinja")]
    for path in [*sorted(package.rglob("*.py")), *sorted(templates)]:
        data = path.read_bytes()
        digest.update(f"{path.parent.name}/{path.name} {len(data)}\n".encode() + data)
    return digest.hexdigest()


def _directory_files(directory: Path | None) -> list[tuple[str, bytes]]:
    """Every entry of the templates directory, whatever its name: a regular file's bytes (at
    most `MAX_BYTES` and one more, so a larger file still changes the key), anything else by
    its kind alone, read through nothing."""
    if directory is None:
        return []
    try:
        info = directory.lstat()
    except FileNotFoundError:
        return []
    if not stat.S_ISDIR(info.st_mode):
        return [("", f"not a directory: {stat.filemode(info.st_mode)}".encode())]
    found = []
    for entry in sorted(os.scandir(directory), key=lambda entry: entry.name):
        if entry.is_file(follow_symlinks=False):
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                found.append((entry.name, handle.read(MAX_BYTES + 1)))
        else:
            found.append(
                (entry.name, f"not a regular file: {stat.filemode(entry.stat(follow_symlinks=False).st_mode)}".encode())
            )
    return found


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"
