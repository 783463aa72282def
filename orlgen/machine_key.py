"""This machine's (and user's) secret key, outside every repository.

32 random bytes in `$XDG_CACHE_HOME/orlgen/check/key` (`~/.cache/orlgen/check/key`), created once,
0600 in a 0700 directory. A pull request or a copied directory cannot compute what it signs:
`check`'s verdict cache names its entries with it (`review.cache`), and `orlgen eval` seals a run
directory's config with it (`eval.rundir`). A key file anyone else can read or write (as git
checks files out), another user's, or a link is no key.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


def default_directory() -> Path:
    """`$XDG_CACHE_HOME/orlgen/check`, or `~/.cache/orlgen/check`: a relative `XDG_CACHE_HOME`
    is ignored, as the XDG spec says (it would put the cache in the working directory)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "orlgen" / "check"


def machine_key() -> bytes | None:
    """This machine's (and user's) secret, shared by `check`'s verdicts and `orlgen eval`'s run
    seals: something a pull request or a copied directory cannot compute."""
    return _key_file(default_directory())


def _key_file(directory: Path) -> bytes | None:
    """The key in `directory`: created once, 0600, in a 0700 directory; None when the file is not
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
