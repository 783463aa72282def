"""Templates are data, not code: the Jinja environment every template renders in.

A project's override templates come from the repository, which a pull request controls, and
they render in `orlgen check` on CI and in every contributor's pre-commit hook. So they render
in Jinja's immutable sandbox (no `__`-attributes, no `__globals__`, no mutating a value), with no
global helpers, a context of plain values (dicts, tuples, strings, numbers) rather than orlgen's
objects, bounded arithmetic, and a loader that reads only regular `*.jinja` files directly inside
the templates directory (no symbolic link, no sub-path, no other file, at most `MAX_BYTES`).
Whatever a template tries beyond that is one `TemplateRefused` line naming the template.

Memory and output are bounded as a whole, not operation by operation (`%`, `'{:>N}'.format`,
`|center(N)`, `|replace('', s)`, `(s,)*k|join` each grow a string, and the list is open): each
render runs under an address-space cap of `MEMORY_BUDGET` bytes above what the process already
uses (`RLIMIT_AS`, restored after the render; on Linux), so an allocation past it is a
MemoryError, turned into one line; and its output is at most `MAX_OUTPUT` characters. Time is
bounded by the render deadline (`orlgen.render.deadline`).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import resource
import stat
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from orlgen.errors import OrlgenError
from orlgen.render.deadline import DeadlineExceeded
from orlgen.schema import printable

MAX_BYTES = 1 << 20  # per template file: the packaged ones are a few kilobytes
MAX_OUTPUT = 16 << 20  # characters one render may produce: a generated module is well under 1 MB
MEMORY_BUDGET = 512 << 20  # bytes of address space one render may add to the process
_MAX_PRODUCT = 1 << 20  # `"x" * n` in a template: at most this many items
_MAX_EXPONENT = 64  # `a ** b` in a template: `b` at most this
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\.jinja")


class TemplateRefused(OrlgenError):
    """A template could not be loaded or rendered; the message names it."""


def read_template(path: Path) -> bytes | None:
    """The bytes of the template file at `path`, or None when there is none. A symbolic link,
    a special file (a FIFO would hang, `/dev/zero` never end) or a file over `MAX_BYTES` is
    refused: the file is opened without following links and read with a bound."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise TemplateRefused(f"{path}: refused: a symbolic link (templates are regular files)") from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TemplateRefused(f"{path}: refused: not a regular file")
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise TemplateRefused(f"{path}: refused: larger than {MAX_BYTES} bytes")
    return data


class _Loader(jinja2.BaseLoader):
    """Templates by plain file name, from the overrides directory first, then orlgen's own."""

    def __init__(self, directories: tuple[Path, ...]) -> None:
        self._directories = directories

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        if not _NAME.fullmatch(template):
            raise TemplateRefused(
                f"template {printable(template)!r} refused: only *.jinja files directly inside the templates directory"
            )
        for directory in self._directories:
            if directory.is_symlink():
                raise TemplateRefused(f"{directory}: refused: the templates directory is a symbolic link")
            path = directory / template
            data = read_template(path)
            if data is not None:
                return _decode(path, data), str(path), _uptodate(path, data)
        raise jinja2.TemplateNotFound(template)


def _uptodate(path: Path, data: bytes) -> Callable[[], bool]:
    """Jinja's check before reusing a compiled template: the file still holds the same bytes."""

    def uptodate() -> bool:
        try:
            return read_template(path) == data
        except (OSError, OrlgenError):
            return False

    return uptodate


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TemplateRefused(f"{path}: refused: not UTF-8 text (byte {exc.start})") from exc


class _Sandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with `*` and `**` bounded: `"x" * 10**12` is a refusal, not a
    MemoryError (loops are bounded by the sandbox's `range` limit and the render deadline)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > _MAX_EXPONENT:
            raise SecurityError(f"exponent {right} is larger than {_MAX_EXPONENT}")
        if operator == "*" and _product_size(left, right) > _MAX_PRODUCT:
            raise SecurityError(f"a repetition larger than {_MAX_PRODUCT} items")
        return super().call_binop(context, operator, left, right)


def _product_size(left: Any, right: Any) -> int:
    for sequence, times in ((left, right), (right, left)):
        if isinstance(sequence, (str, bytes, list, tuple)) and isinstance(times, int):
            return len(sequence) * times
    return 0


@lru_cache(maxsize=8)
def environment(directories: tuple[Path, ...]) -> jinja2.Environment:
    """The sandboxed environment loading from `directories`, first match wins."""
    env = _Sandbox(
        loader=_Loader(directories),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=True,
    )
    env.globals.clear()  # no range, cycler, joiner, namespace, lipsum or dict
    return env


def render(directories: tuple[Path, ...], name: str, context: Mapping[str, Any]) -> str:
    """Template `name` rendered with `context` made plain, in bounded memory and output; any
    failure is one line naming the template file (and line) it happened in."""
    values = {key: plain(value) for key, value in context.items()}
    try:
        with _memory_cap(MEMORY_BUDGET):  # compiling folds constants: `"%9999999999d" % 1` runs there
            output = environment(directories).get_template(name).render(values)
    except (TemplateRefused, DeadlineExceeded):
        raise
    except MemoryError as exc:
        raise TemplateRefused(
            f"{_where(exc, name)}: refused: the render needs more than {MEMORY_BUDGET >> 20} MiB of memory"
        ) from None
    except Exception as exc:  # a template's error is the template's: SecurityError, TypeError, ...
        raise TemplateRefused(f"{_where(exc, name)}: {type(exc).__name__}: {printable(str(exc))}") from None
    if len(output) > MAX_OUTPUT:
        raise TemplateRefused(f"template {name}: refused: its output is larger than {MAX_OUTPUT} characters")
    return output


@contextmanager
def _memory_cap(budget: int) -> Iterator[None]:
    """Cap the process's address space at its current size plus `budget` for the block, then
    restore the previous limit. Where the size cannot be read (no `/proc`), there is no cap."""
    try:
        used = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = min(value for value in (used + budget, soft, hard) if value != resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _where(exc: Exception, name: str) -> str:
    """The template file and line an error comes from: Jinja reports template frames under the
    template's file name."""
    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.filename:
        return f"{exc.filename} line {exc.lineno}"
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename.endswith(".jinja")]
    return f"{frames[-1].filename} line {frames[-1].lineno}" if frames else f"template {name}"


def plain(value: Any) -> Any:
    """A value a template may see: dataclasses become dicts, sequences tuples, `str` subclasses
    plain strings, so no method or class of orlgen's is reachable from a template."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(plain(item) for item in value)
    if isinstance(value, str):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    raise TypeError(f"{type(value).__name__} is not a plain template value")
