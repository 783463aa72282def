"""Text that displays as something other than its bytes: invisible characters and look-alikes.

A reviewer reads generated modules, diffs and config as they display. A bidi control or a
zero-width space makes text display differently from what Python reads; a Hangul filler
(U+115F) prints as nothing although `str.isprintable` calls it printable; `раth` (Cyrillic р
and а) displays as `path`. This module names such text, once, for every place that shows it:
docstrings and diff output escape invisible characters, names that look alike are renamed, and an
`out` directory that mixes scripts or looks like another path is refused.

The look-alike table covers the Latin look-alikes of Cyrillic, Greek and Armenian letters and
of a few Latin variants (Unicode's confusables.txt, the letters that matter for identifiers and
paths); NFKC folds compatibility forms (fullwidth, ligatures, math letters) first.
"""

from __future__ import annotations

import io
import re
import tokenize
import unicodedata
from collections.abc import Iterable

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt) and blank letters `isprintable` misses.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)

_INVISIBLE = frozenset(chr(code) for low, high in _INVISIBLE_RANGES for code in range(low, high + 1))

_LOOKS_LATIN = dict(
    zip(
        # Cyrillic
        "аеорсухѕіјһԁԛԝӏкԍгвмнтАВЕКМНОРСТУХЅІЈԚԜԌ"
        # Greek
        "αορνιικυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ"
        # Armenian, Latin variants
        "օսհոցıȷɑɡℓ",
        "aeopcyxsijhdqwlkgrbmhtABEKMHOPCTYXSIJQWG" "aopviikuxeABEZHIKMNOPTYX" "ounhgijagl",
        strict=True,
    )
)


# Scripts one language writes together (UTS #39 "highly restrictive"): not a mixture.
_WRITTEN_TOGETHER = (
    frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "CJK", "BOPOMOFO"}),
    frozenset({"LATIN", "CJK", "HANGUL"}),
)


def invisible(char: str) -> bool:
    """Whether `char` displays as nothing, or changes how the text around it displays."""
    return char != " " and (not char.isprintable() or char in _INVISIBLE)


def escaped(text: str, keep: str = "") -> str:
    """`text` with every invisible character (but those in `keep`) written as a Python escape
    (`\\u202e`), so what displays is what the bytes hold."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        char if char in keep or not invisible(char) else char.encode("unicode_escape").decode("ascii") for char in text
    )


def scripts(text: str) -> list[str]:
    """The scripts of the letters of `text` (`LATIN`, `CYRILLIC`, ...), digits and marks aside."""
    found = set()
    for char in unicodedata.normalize("NFKC", text):
        if char.isalpha():
            found.add(unicodedata.name(char, "UNKNOWN").split(" ", 1)[0])
    return sorted(found)


def skeleton(text: str) -> str:
    """What `text` looks like: NFKC, invisible characters dropped, look-alike letters mapped to
    the Latin letter they look like. Two strings with one skeleton read the same."""
    if text.isascii() and text.isprintable():
        return text
    folded = unicodedata.normalize("NFKC", text)
    return "".join(_LOOKS_LATIN.get(char, char) for char in folded if not invisible(char))


def problem(text: str) -> str | None:
    """Why `text` alone can mislead a reader: an invisible character, or letters of two scripts."""
    if not (text.isascii() and text.isprintable()) and any(invisible(char) for char in text):
        return "holds an invisible character"
    found = scripts(text)
    if len(found) > 1 and not any(set(found) <= together for together in _WRITTEN_TOGETHER):
        return f"mixes scripts ({', '.join(found).title()})"
    return None


def confusing(names: Iterable[str]) -> dict[str, str]:
    """The names among `names` that mislead, each with why: alone (`problem`), or because it
    looks like another of the names. Of names that look alike, an ASCII one is kept (ASCII names
    map to themselves, so there is at most one per skeleton); otherwise the first is."""
    names = list(dict.fromkeys(names))
    found = {name: why for name in names if (why := problem(name)) is not None}
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(skeleton(name), []).append(name)
    for group in groups.values():
        if len(group) < 2:
            continue
        kept = next((name for name in group if name.isascii()), group[0])
        for name in group:
            if name != kept:
                found.setdefault(name, f"looks like {kept!r}")
    return found


def visible_source(source: str) -> str:
    """Python `source` with every invisible character written as its escape, so a module displays
    what it holds. They can only come from server text, which reaches a module only inside
    string literals (docstrings, descriptions, wire names, enum values), where `\\u202e` is the
    same string as the character itself. The check is one C-speed pass in the usual case."""
    if _all_visible(source):
        return source
    starts = [0]  # where each line starts; Python source lines end at "\n" only (not at U+2028)
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    edits: list[tuple[int, int, str]] = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if _all_visible(token.string):
            continue
        prefix = token.string[: len(token.string) - len(token.string.lstrip("rRbBuUfF"))]
        if token.type != tokenize.STRING or set(prefix.lower()) & set("rbf"):
            raise ValueError(f"an invisible character outside a plain string literal, line {token.start[0]}")
        start = starts[token.start[0] - 1] + token.start[1]
        end = starts[token.end[0] - 1] + token.end[1]
        edits.append((start, end, escaped(token.string, keep="\n")))
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source


def _all_visible(text: str) -> bool:
    return all(line.isprintable() for line in text.split("\n")) and _INVISIBLE.isdisjoint(text)


_MODULE_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")


def module_target_problem(value: str) -> str | None:
    """Why a `module:Class` target can hide from a reviewer, or None. Python imports non-ASCII
    module names (NFKC-folded), so `examples.еcho:Echo` (Cyrillic е) imports `examples/еcho.py`
    while every diff shows `examples.echo`: only plain ASCII identifiers are accepted, at capture
    and at check, one rule for both."""
    if _MODULE_TARGET.fullmatch(value):
        return None
    return f"{value!a} is not a plain module:Class target (ASCII identifiers only, a.b.c:Class)"
