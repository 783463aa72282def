"""Google-style tool descriptions: prose, `Args:` entries, `Returns:`."""

from __future__ import annotations

import re
from collections.abc import Collection

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises)\s*:\s*$")
_ARG = re.compile(r"^(\S+?)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(text: str, params: Collection[str] = ()) -> tuple[str, dict[str, str], str]:
    """The Google-style parts of a tool description: prose, `Args:` entries by name, `Returns:`.

    A section starts at a line that is only its header (`Args:`); an entry starts at the section's
    first indentation, and deeper lines continue it. Outside sections, a line `name: text` whose
    name is one of `params` documents that parameter too (authors write such un-headed lines), and
    deeper lines continue it. The rest is prose."""
    reader = _Reader(params)
    for line in text.splitlines():
        reader.read(line)
    squash = lambda parts: " ".join(" ".join(parts).split())  # noqa: E731
    prose_text = re.sub(r"\n{3,}", "\n\n", "\n".join(reader.prose)).strip()  # lines taken out leave no gap
    return prose_text, {name: squash(words) for name, words in reader.args.items()}, squash(reader.returns)


class _Reader:
    """The parts read so far, and where the reader is: in which section, in which entry."""

    def __init__(self, params: Collection[str]) -> None:
        self.params = params
        self.prose: list[str] = []
        self.args: dict[str, list[str]] = {}
        self.returns: list[str] = []
        self.section: str | None = None
        self.indent: int | None = None  # the section's first indentation: where its entries start
        self.current: str | None = None  # the `Args:` entry being read
        self.bare: list[str] | None = None  # the un-headed entry being read, and the indent of its line
        self.bare_indent = 0

    def read(self, line: str) -> None:
        header = _SECTION.match(line)
        if header:
            self.section, self.indent, self.current = header[1], None, None
            return
        depth = len(line) - len(line.lstrip())
        if self.section is None:
            self._outside(line, depth)
        elif line.strip():
            self._inside(line, depth)

    def _outside(self, line: str, depth: int) -> None:
        """Prose, or an un-headed `name: text` entry for one of the parameters (and its continuation)."""
        entry = _ARG.match(line.strip())
        if self.bare is not None and line.strip() and depth > self.bare_indent:
            self.bare.append(line.strip())
        elif entry and entry[1] in self.params and entry[1] not in self.args:
            self.bare, self.bare_indent = self.args.setdefault(entry[1], [entry[2]]), depth
        else:
            self.bare = None
            self.prose.append(line)

    def _inside(self, line: str, depth: int) -> None:
        """A line of a section: an entry or its continuation (`Args:`), the text (`Returns:`)."""
        self.indent = depth if self.indent is None else self.indent
        if self.section in ("Args", "Arguments", "Parameters"):
            entry = _ARG.match(line.strip()) if depth <= self.indent else None
            if entry:
                self.current = entry[1]
                self.args[self.current] = [entry[2]]
            elif self.current is not None:
                self.args[self.current].append(line.strip())
        elif self.section == "Returns":
            self.returns.append(line.strip())
