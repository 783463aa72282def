"""`__all__` in the order ruff's RUF022 wants (ruff 0.17.5, "isort-style"), so that a generated
module passes a user's ruff as it is.

RUF022 puts SCREAMING_CASE names first, then CamelCase, then the rest, and orders each group
naturally: digit runs compare as numbers (`get_v2_rates` before `get_v10_rates`), by the rules of
the `natord` crate ruff uses (Martin Pool's strnatcmp): a run that starts with `0` on either side
compares digit by digit instead. Plain string order is what ruff rejects.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable


def dunder_all_order(names: Iterable[str]) -> list[str]:
    return sorted(names, key=functools.cmp_to_key(_compare))


def _group(name: str) -> int:
    """0 constant, 1 class, 2 anything else. ruff counts a name's length in UTF-8 bytes: a single
    uppercase character is a class, a single non-ASCII one can be a constant."""
    if len(name.encode()) > 1 and name.isupper():
        return 0
    return 1 if name[:1].isupper() else 2


def _compare(a: str, b: str) -> int:
    return (_group(a) > _group(b)) - (_group(a) < _group(b)) or natural_compare(a, b)


def natural_compare(a: str, b: str) -> int:
    """-1, 0 or 1, as `natord::compare(a, b)` orders identifiers (which hold no whitespace)."""
    i = j = 0
    while i < len(a) and j < len(b):
        if _digit(a[i]) and _digit(b[j]):
            end_a, end_b = _run_end(a, i), _run_end(b, j)
            run_a, run_b = a[i:end_a], b[j:end_b]
            key_a: tuple[int | str, ...]
            key_b: tuple[int | str, ...]
            if a[i] == "0" or b[j] == "0":  # "fractional": digit by digit, a shorter run first
                key_a, key_b = (run_a,), (run_b,)
            else:  # by value: the longer run is larger, else the first differing digit decides
                key_a, key_b = (len(run_a), run_a), (len(run_b), run_b)
            if key_a != key_b:
                return 1 if key_a > key_b else -1
            i, j = end_a, end_b
            continue
        if a[i] != b[j]:
            return 1 if a[i] > b[j] else -1
        i, j = i + 1, j + 1
    return (len(a) - i > len(b) - j) - (len(a) - i < len(b) - j)


def _digit(char: str) -> bool:
    return "0" <= char <= "9"


def _run_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and _digit(text[end]):
        end += 1
    return end
