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
    prose: list[str] = []
    args: dict[str, list[str]] = {}
    returns: list[str] = []
    section, indent, current = None, None, None
    bare: list[str] | None = None  # the un-headed entry being read, and the indent of its line
    bare_indent = 0
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section, indent, current = header[1], None, None
            continue
        depth = len(line) - len(line.lstrip())
        if section is None:
            entry = _ARG.match(line.strip())
            if bare is not None and line.strip() and depth > bare_indent:
                bare.append(line.strip())
            elif entry and entry[1] in params and entry[1] not in args:
                bare, bare_indent = args.setdefault(entry[1], [entry[2]]), depth
            else:
                bare = None
                prose.append(line)
            continue
        if not line.strip():
            continue
        indent = depth if indent is None else indent
        if section in ("Args", "Arguments", "Parameters"):
            entry = _ARG.match(line.strip()) if depth <= indent else None
            if entry:
                current = entry[1]
                args[current] = [entry[2]]
            elif current is not None:
                args[current].append(line.strip())
        elif section == "Returns":
            returns.append(line.strip())
    squash = lambda parts: " ".join(" ".join(parts).split())  # noqa: E731
    prose_text = re.sub(r"\n{3,}", "\n\n", "\n".join(prose)).strip()  # lines taken out leave no gap
    return prose_text, {name: squash(words) for name, words in args.items()}, squash(returns)
