"""Tool descriptions read as the docstrings they usually are, and prose made safe to write into one.

Published environments document parameters in the tool function's docstring (Google `Args:`
blocks, sometimes NumPy or reST), and the server sends that docstring as the tool's description.
`parse` splits it into prose, per-parameter text, and the `Returns`/`Raises` text, so the plan
can give each parameter one description and the method a real `Returns:` section.

`safe` is the other direction: TRL reads generated docstrings back with
`transformers.utils.get_json_schema`, which cuts a description at the first `Args:`, `Returns:`
or `Raises:` (even mid-line) and parses a trailing `(choices: ...)` as JSON. Text that would
trip it is changed minimally, here and nowhere else.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_ARG_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments", "Other Parameters"}
)
_RETURN_SECTIONS = frozenset({"Returns", "Return", "Yields"})
_RAISE_SECTIONS = frozenset({"Raises", "Raise", "Exceptions"})
_PARSED = _ARG_SECTIONS | _RETURN_SECTIONS | _RAISE_SECTIONS
# Every pattern below is anchored and has possessive quantifiers wherever two parts could take the
# same characters, so a match is linear in the line whatever the line holds (no backtracking).
# A header: `Args:`, `args:`, `**Args:**`, `**Args**:`, `## Args`, `## Args:`.
_HEADER = re.compile(
    r"^(?P<indent>[ \t]*+)(?:(?P<hashes>\#{1,6}+)[ \t]++)?(?P<bold>\*\*)?(?P<name>[A-Za-z][A-Za-z ]*+)"
    r"(?P<end>:\*\*|\*\*:|:|\*\*)?[ \t]*+$"
)
_NUMPY_RULE = re.compile(r"^[ \t]*+-{3,}+[ \t]*+$")
# One entry: `name (type): text`, also as a Markdown bullet and with the name in backticks.
_ENTRY = r"(?:[-*\u2022][ \t]++)?`?(?P<name>\*{0,2}+\w[\w-]*+)`?[ \t]*+(?:\((?P<type>[^()\n]*+)\)[ \t]*+)?"
_GOOGLE_ENTRY = re.compile(rf"^{_ENTRY}:[ \t]*+(?P<text>.*+)$")
_NUMPY_ENTRY = re.compile(r"^(?P<name>\*{0,2}+\w[\w-]*+)[ \t]*+(?::[ \t]*+(?P<type>.*+))?$")
# An un-headed parameter line in the prose (`pump_id: which pump`, `- rate - ml/h`): taken only
# when the name is one of the tool's parameters.
_BARE_ENTRY = re.compile(rf"^(?P<indent>[ \t]*+){_ENTRY}(?::|[-\u2013\u2014](?=[ \t]))[ \t]*+(?P<text>.*+)$")
# A reST (`:param x: text`) or epytext (`@param x: text`) field; `:type x:`/`:rtype:` are read and
# dropped (the type hint says it).
_REST_FIELD = re.compile(
    r"^[:@](?P<kind>param|parameter|arg|argument|keyword|returns?|raises?|type|rtype)"
    r"(?:[ \t]++(?P<name>[^:]++))?:[ \t]*+(?P<text>.*+)$"
)

_SECTION_WORD = re.compile(r"(Args|Returns|Raises):")  # the parser cuts even mid-word
_CHOICES = re.compile(r"\(choices:", re.IGNORECASE)


@dataclass(frozen=True)
class Docstring:
    prose: str  # summary and body, without the parsed sections
    params: dict[str, str] = field(default_factory=dict)  # parameter name → its text, one line
    returns: str = ""
    raises: str = ""


def parse(text: str, params: Iterable[str] = ()) -> Docstring:
    """Split a docstring into prose, parameter descriptions, and `Returns`/`Raises` text.

    `params` are the tool's parameter names: a prose line `name: text` (no `Args:` above it)
    documents that parameter when `name` is one of them, and leaves the prose."""
    lines = inspect.cleandoc(text.expandtabs(4)).split("\n")  # only newlines end a docstring line
    prose: list[str] = []
    found: dict[str, str] = {}
    returns: list[str] = []
    raises: list[str] = []
    i = 0
    while i < len(lines):
        section, numpy, body, i = _section(lines, i)
        if section is None:
            prose.append(lines[i])
            i += 1
        elif section in _ARG_SECTIONS:
            found.update(_entries(body, numpy))
        elif section in _RETURN_SECTIONS:
            # NumPy puts the type on a line of its own, the text indented below it.
            returns.append(_join(body[1:] if numpy and len(body) > 1 and _indent(body[1]) else body))
        else:
            raises.extend(f"{name}: {text}" if text else name for name, text in _entries(body, numpy).items())
    prose, rest = _rest_fields(prose)
    # A parameter documented in a section or a field already keeps a later `name: text` line as prose.
    prose, bare = _bare_entries(prose, frozenset(params) - found.keys() - rest.params.keys())
    return Docstring(
        prose=_tidy(prose),
        params={name: text for name, text in {**bare, **rest.params, **found}.items() if text},
        returns=" ".join(filter(None, [*returns, rest.returns])),
        raises="; ".join(filter(None, [*raises, rest.raises])),
    )


def _header(line: str) -> tuple[str, int] | None:
    """The section a header line opens (its name, title-cased) and the header's indent."""
    match = _HEADER.match(line)
    if match is None:
        return None
    bold, end = match.group("bold") is not None, match.group("end") or ""
    if bold != ("**" in end) or (not end and not match.group("hashes")):
        return None  # `**Args:` half bold, or a plain word line (only a `#` heading needs no colon)
    return " ".join(match.group("name").split()).title(), len(match.group("indent"))


def _section(lines: list[str], i: int) -> tuple[str | None, bool, list[str], int]:
    """The section starting at line `i` (a header such as `Args:`, or NumPy `Parameters` + rule):
    its name, whether it is NumPy style, its body lines dedented, and the index after it; `None`
    when no parsed section starts here. A body is the lines indented below the header, or, when
    the first line after the header is not indented (`Args:` then `x: text`), its paragraph."""
    numpy = i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1]) and lines[i].strip().title() in _PARSED
    header = None if numpy else _header(lines[i])
    if numpy:
        name, indent, start = lines[i].strip().title(), _indent(lines[i]), i + 2
    elif header is not None and header[0] in _PARSED:
        (name, indent), start = header, i + 1
    else:
        return None, False, [], i
    end = start
    if not numpy and start < len(lines) and lines[start].strip() and _indent(lines[start]) <= indent:
        while end < len(lines) and lines[end].strip() and _header(lines[end]) is None:
            end += 1  # a flush body: its paragraph
        return name, False, _dedent(lines[start:end]), end
    while end < len(lines) and (
        not lines[end].strip()
        or _indent(lines[end]) > indent
        or (numpy and _header(lines[end]) is None and not (end + 1 < len(lines) and _NUMPY_RULE.match(lines[end + 1])))
    ):
        end += 1
    return name, bool(numpy), _dedent(lines[start:end]), end


def _entries(body: list[str], numpy: bool) -> dict[str, str]:
    """`name (type): text` entries (Google) or `name : type` + indented text (NumPy)."""
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            continue
        if _indent(line) == 0:
            google = None if numpy else _GOOGLE_ENTRY.match(line)
            match = google or (_NUMPY_ENTRY.match(line) if numpy else None)
            if match:
                current = entries.setdefault(match.group("name").lstrip("*"), [])
                if google and google.group("text"):
                    current.append(google.group("text"))
                continue
        if current is not None:
            current.append(line.strip())
    return {name: " ".join(" ".join(text).split()) for name, text in entries.items()}


def _bare_entries(prose: list[str], params: frozenset[str]) -> tuple[list[str], dict[str, str]]:
    """Un-headed `name: text` lines naming one of `params`, with the lines indented below them,
    taken out of the prose."""
    kept: list[str] = []
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    depth = 0
    for line in prose:
        if current is not None and line.strip() and _indent(line) > depth:
            current.append(line.strip())
            continue
        match = _BARE_ENTRY.match(line) if params else None
        name = match.group("name").lstrip("*") if match else None
        if match and name in params and name not in entries:
            current, depth = entries.setdefault(name, []), len(match.group("indent"))
            current.append(match.group("text"))
        else:
            current = None
            kept.append(line)
    return kept, {name: " ".join(" ".join(text).split()) for name, text in entries.items()}


def _rest_fields(prose: list[str]) -> tuple[list[str], Docstring]:
    """reST and epytext field lists (`:param name: text`, `@return: text`) taken out of the prose."""
    kept: list[str] = []
    params: dict[str, list[str]] = {}
    returns: list[str] = []
    raises: list[str] = []
    current: list[str] | None = None
    for line in prose:
        match = _REST_FIELD.match(line.strip()) if not line.startswith((" ", "\t")) or current is None else None
        if match:
            kind, name = match.group("kind"), (match.group("name") or "").strip()
            if kind in ("type", "rtype"):
                current = []  # read, with its continuation lines, and dropped
            elif kind.startswith("return"):
                current = returns
            elif kind.startswith("raise"):
                current = raises
                raises.append(f"{name}:" if name else "")
            else:
                current = params.setdefault(name.split()[-1] if name else "", [])
            current.append(match.group("text"))
        elif current is not None and line.startswith((" ", "\t")) and line.strip():
            current.append(line.strip())
        else:
            current = None
            kept.append(line)
    return kept, Docstring(
        prose="",
        params={name: " ".join(" ".join(text).split()) for name, text in params.items() if name},
        returns=" ".join(" ".join(returns).split()),
        raises=" ".join(" ".join(raises).split()),
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _dedent(lines: list[str]) -> list[str]:
    depth = min((_indent(line) for line in lines if line.strip()), default=0)
    return [line[depth:] for line in lines]


def _join(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def _tidy(lines: list[str]) -> str:
    """Trailing spaces off, no runs of blank lines, none at either end."""
    out: list[str] = []
    for line in (line.rstrip() for line in lines):
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip("\n")


def safe(text: str) -> str:
    """Prose that `get_json_schema` reads back as written: no section word that would cut it
    short (`Returns:` becomes `Returns :`), no trailing `(choices: ...)` it would parse as JSON."""
    return _CHOICES.sub("(choices :", _SECTION_WORD.sub(r"\1 :", text))


MAX_INDENT = 16  # columns of a prose line's own indentation kept (nested lists, code)


def bounded_runs(text: str) -> str:
    """Prose whose every run of whitespace is short: each line's inner runs one space, its
    indentation at most `MAX_INDENT` columns, no blank line after another. The tool docstring
    reaches `transformers.utils.get_json_schema` (TRL calls it for every prompt), whose
    `(.*?)[\\n\\s]*(Args:|Returns:|Raises:|\\Z)` patterns rescan a whitespace run from each of its
    characters: a run of n costs n², 47 s at 60,000 spaces; runs this short cost linear time.
    Every character `\\s` matches counts (tabs, U+2028, U+3000, ...): each becomes a space."""
    return _tidy([" " * min(_indent(line), MAX_INDENT) + " ".join(line.split()) for line in text.split("\n")])


def one_line(text: str) -> str:
    return " ".join(text.split())
