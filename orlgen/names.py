"""Validated Python names for untrusted wire names.

A server may call a tool `class`, `submit-solution` or `_private`, and a parameter `from` or
`file-path`. Every name that reaches generated code is one of the types below, built by one of
the functions here, so a template can never receive a string that does not compile.
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Callable, Iterable

from orlgen import lookalike
from orlgen.errors import RefusedWrite

# The longest name a tool or parameter is shown to the model under (OpenAI-compatible function
# names are `^[a-zA-Z0-9_-]{1,64}$`; a longer one is refused by such endpoints or cut by them).
MAX_NAME_LENGTH = 64
# The longest wire name of a tool a snapshot records. It is sent to the server as is, so it
# cannot be shortened (a shortened name calls no tool): a longer one is refused where it enters.
# MCP advises tool names of 1-128 characters and OpenAI shows at most 64 (the shown name is cut
# to `MAX_NAME_LENGTH`, the wire name kept); 1,024 leaves room for generated or namespaced names
# and keeps the five copies of a name in a module to a few kilobytes.
MAX_WIRE_NAME_LENGTH = 1024

_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]+")
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+[0-9]*|[0-9]+[a-z0-9]*")


class Taken(set[str]):
    """Names in use, and the next number to try for each renamed base: with it, renaming n
    names that all want one base is linear, not quadratic (`x_2`, `x_3`, ... are not re-tried)."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(names)
        self.next_number: dict[tuple[str, str], int] = {}


def _numbered(key: tuple[str, str], spell: Callable[[int], str], usable: Callable[[str], bool], taken: set[str]) -> str:
    """The first `spell(n)`, n = 2, 3, ..., that is usable, resuming where the last search for
    `key` in `taken` ended (names are only ever added to `taken`, so the earlier ones stay used)."""
    numbers = taken.next_number if isinstance(taken, Taken) else {}
    number = numbers.get(key, 2)
    while not usable(spell(number)):
        number += 1
    numbers[key] = number + 1
    return spell(number)


def _as_set(taken: Iterable[str]) -> set[str]:
    return taken if isinstance(taken, set) else set(taken)


def identifier_problem(name: str) -> str | None:
    """Why `name` is not a `PythonIdentifier`, or None when it is: the one check of a module,
    snapshot or method name.

    A module name becomes `<out>/<name>.py` and `<out>/<name>.snapshot.json`: a lower-case ASCII
    identifier keeps both inside `<out>` (no separator, not absolute, no `..`), importable, the
    same file on case-insensitive file systems, and clear of `__init__`-like package files."""
    if not (name.isascii() and name.isidentifier()):
        return "not a Python identifier (letters, digits and _ only, no path)"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "a Python keyword"
    if name.startswith("_"):
        return "starts with _ (reserved for package files such as __init__)"
    if name != name.lower():
        return "not lower-case"
    if len(name) > MAX_NAME_LENGTH:
        return f"longer than {MAX_NAME_LENGTH} characters"
    return None


def check_name(name: str, what: str) -> str:
    """`name`, or a `RefusedWrite` naming `what` it was for and why it is refused."""
    problem = identifier_problem(name)
    if problem is not None:
        raise RefusedWrite(f"{what} {name!r} refused: {problem}")
    return name


class PythonIdentifier(str):
    """A lower-case ASCII identifier that is not a keyword and does not start with `_`."""

    def __new__(cls, value: str) -> PythonIdentifier:
        problem = identifier_problem(value)
        if problem is not None:
            raise ValueError(f"{value!r} is not a usable Python identifier: {problem}")
        return super().__new__(cls, value)


class ClassName(str):
    """An ASCII CapWords identifier."""

    def __new__(cls, value: str) -> ClassName:
        if not (value.isascii() and value.isidentifier()) or not value[0].isupper():
            raise ValueError(f"{value!r} is not a usable class name")
        return super().__new__(cls, value)


def _ascii_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _WORD.findall(_NOT_IDENT.sub(" ", folded.replace("_", " ")))


def snake_case(text: str) -> str:
    """`submit-solution` → `submit_solution`, `getHTTPStatus` → `get_httpstatus`; may be empty."""
    return "_".join(word.lower() for word in _ascii_words(text))


def identifier(wire_name: str, *, taken: Iterable[str] = ()) -> PythonIdentifier:
    """The Python name for a wire name: snake case, never a keyword, a reserved or a taken name.

    A name that needs changing gets a `_` suffix (`from` → `from_`), then a number when that is
    taken too, so the rename is predictable from the wire name and the names before it. A name
    longer than `MAX_NAME_LENGTH` is cut to fit, suffix included.
    """
    used = _as_set(taken)
    base = snake_case(wire_name) or "unnamed"
    if base[0].isdigit():
        base = f"n{base}"
    base = base[:MAX_NAME_LENGTH]
    for candidate in (base, _fit(base, "_")):
        if _usable(candidate, used):
            return PythonIdentifier(candidate)
    return PythonIdentifier(
        _numbered(("_", base), lambda number: _fit(base, f"_{number}"), lambda name: _usable(name, used), used)
    )


def _fit(base: str, suffix: str) -> str:
    """`base` + `suffix`, `base` cut so that the whole is at most `MAX_NAME_LENGTH` long."""
    return base[: MAX_NAME_LENGTH - len(suffix)] + suffix


def method_names(wire_names: Iterable[str], *, taken: Iterable[str] = ()) -> list[PythonIdentifier]:
    """Python names for a module's tools, in the given order, as the model sees them: each wire
    name that is already a usable name is kept, whatever the order (`echo` stays `echo` beside
    `Echo`, which becomes `echo_`); the others, and every name that looks like another or hides
    characters (`еcho` beside `echo`, see `lookalikes`), are renamed to distinct ASCII names."""
    wire_names = list(wire_names)
    used = Taken(taken)
    misleading = lookalikes(wire_names)
    kept = {
        wire for wire in wire_names if identifier_problem(wire) is None and wire not in used and wire not in misleading
    }
    used |= kept
    out = []
    for wire in wire_names:
        name = PythonIdentifier(wire) if wire in kept else identifier(wire, taken=used)
        used.add(name)
        out.append(name)
    return out


def _usable(name: str, taken: set[str]) -> bool:
    return not (keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in taken)


def class_name(text: str, *, suffix: str = "", taken: Iterable[str] = ()) -> ClassName:
    """CapWords name from any text: `submit-solution` + `Params` → `SubmitSolutionParams`."""
    used = _as_set(taken)
    words = _ascii_words(text) or ["Unnamed"]
    base = "".join(word[:1].upper() + word[1:] for word in words)
    if base[0].isdigit():
        base = f"N{base}"
    if f"{base}{suffix}" not in used:
        return ClassName(f"{base}{suffix}")
    return ClassName(
        _numbered((suffix, base), lambda number: f"{base}{number}{suffix}", lambda name: name not in used, used)
    )


def slug(text: str) -> PythonIdentifier:
    """Module name for an environment: `Eigent/SETA` → `eigent_seta`."""
    return identifier(text)


_ENV_SUFFIXES = ("environment", "env")


def env_slug(text: str) -> PythonIdentifier:
    """Module name for an environment class or key: its words, less a trailing `Environment` or
    `Env`: `IcuSepsisEnvironment` → `icu_sepsis`, `echoenvironment` → `echo`."""
    words = [word.lower() for word in _ascii_words(text)]
    while len(words) > 1 and words[-1] in _ENV_SUFFIXES:
        words.pop()
    if len(words) == 1:
        for suffix in _ENV_SUFFIXES:
            if words[0].endswith(suffix) and len(words[0]) > len(suffix):
                words[0] = words[0][: -len(suffix)]
                break
    return identifier("_".join(words))


class ParamName(str):
    """A parameter name as Python reads it: an identifier that NFKC normalisation leaves alone
    (Python would read `ﬁle` as `file`), no keyword, and all word characters (as the docstring
    parser of `get_json_schema` requires)."""

    def __new__(cls, value: str) -> ParamName:
        if not _keepable(value):
            raise ValueError(f"{value!r} is not a usable parameter name")
        return super().__new__(cls, value)


def shown_names(wire_names: Iterable[str], methods: Iterable[str]) -> list[str]:
    """The name the model is shown for each tool (its method's `__name__`, which
    `get_json_schema` reads): the wire name, unless it looks like another tool's, hides a
    character or is longer than `MAX_NAME_LENGTH`; then the method's own distinct ASCII name.
    The model then never sees two tools under names that display alike."""
    wire_names = list(wire_names)
    misleading = lookalikes(wire_names)
    return [
        wire if wire not in misleading and len(wire) <= MAX_NAME_LENGTH else method
        for wire, method in zip(wire_names, methods, strict=True)
    ]


def _keepable(name: str) -> bool:
    return (
        len(name) <= MAX_NAME_LENGTH
        and name.isidentifier()
        and not keyword.iskeyword(name)
        and unicodedata.normalize("NFKC", name) == name
        and re.fullmatch(r"\w+", name) is not None
    )


def param_names(wire_names: Iterable[str], *, taken: Iterable[str] = ()) -> list[ParamName]:
    """Python names for a tool's parameters, in the given order: each wire name that Python can
    use is kept as is; only the others are renamed (`from` → `from_`, `file-path` → `file_path`),
    never onto a kept name. A name that would mislead a reader is renamed too (see
    `lookalikes`): `раth` beside `path`, `path` with an invisible filler, a mix of scripts."""
    wire_names = list(wire_names)
    used = Taken(taken)
    misleading = lookalikes(wire_names)
    kept = {wire for wire in wire_names if _keepable(wire) and wire not in used and wire not in misleading}
    used |= kept
    out = []
    for wire in wire_names:
        if wire in kept:
            out.append(ParamName(wire))
            continue
        name = identifier(wire, taken=used)
        used.add(name)
        out.append(ParamName(name))
    return out


def lookalikes(wire_names: Iterable[str]) -> dict[str, str]:
    """The names, among one tool's parameters or one module's fields, that display as another
    name or hide characters, each with why; they are renamed to ASCII and reported."""
    return lookalike.confusing(wire_names)
