"""How a fact reads as text: type words, value literals, constraint phrases."""

from __future__ import annotations

import json
import math
import re
from typing import Any

TYPE_WORDS = {
    "string": r"string|str",
    "integer": r"integer|int",
    "number": r"number|float",
    "boolean": r"boolean|bool",
    "object": r"object|dict",
    "array": r"array|list|tuple",
    "null": r"null|None",
    "any": r"any|Any",
}
# What may start the text of a value of each type in a structure description.
TYPE_STARTS = {
    "string": r"(?:string|str)\b|[\"']",
    "integer": r"(?:integer|int)\b|-?\d",
    "number": r"(?:number|float)\b|-?\d",
    "boolean": r"(?:boolean|bool|true|false|True|False)\b",
    "object": r"(?:object|dict)\b|\{|<\w",
    "array": r"(?:array|list|tuple)\b|\[",
    "null": r"(?:null|None)\b",
    "any": r"",
}

# How a description says a default: `default: 3`, `defaults to 3`, `default value is 3`.
DEFAULT_WORDS = r"(?i:default(?:s| value)?(?:\s+is|\s+to)?)"


def unspaced(text: str) -> str:
    return re.sub(r"\s+", "", text)


def value_forms(value: Any) -> list[str]:
    if value is None:
        return ["null", "None"]
    if isinstance(value, bool):
        return ["true", "True"] if value else ["false", "False"]
    if isinstance(value, (int, float)):
        forms = [json.dumps(value), str(value)]
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            forms.append(str(int(value)))
        return list(dict.fromkeys(forms))
    if isinstance(value, str):
        return [json.dumps(value, ensure_ascii=False), repr(value), value] if value else ['""', "''"]
    return [json.dumps(value, ensure_ascii=False, sort_keys=True), json.dumps(value, ensure_ascii=False), repr(value)]


def value_re(value: Any) -> str:
    end = r"(?!\w|\.\d)"  # `10` must not match `100` or `10.5`; a full stop may follow
    return "(?:" + "|".join(re.escape(f) + (end if f[-1:].isalnum() else "") for f in value_forms(value)) + ")"


def enum_value_re(value: Any) -> str:
    """An enum value as a description writes it; a string only quoted (a bare word is no value)."""
    forms = value_forms(value)
    quoted = [f for f in forms if not f[:1].isalnum() and f[:1] != "-"] if isinstance(value, str) else forms
    return "|".join(re.escape(f) + (r"\b" if f[-1:].isalnum() else "") for f in quoted)


def constraint_re(key: str, value: Any) -> str:
    v = value_re(value)
    return {
        "minimum": rf"(?:>=|≥|at least|minimum(?: of| is)?:?|min(?:imum)?\s*[:=])\s*{v}",
        "maximum": rf"(?:<=|≤|at most|maximum(?: of| is)?:?|max(?:imum)?\s*[:=])\s*{v}",
        "exclusiveMinimum": rf"(?:(?<![<>=])>(?!=)|greater than|more than|exclusive minimum:?)\s*{v}",
        "exclusiveMaximum": rf"(?:(?<![<>=])<(?!=)|less than|fewer than|exclusive maximum:?)\s*{v}",
        "multipleOf": rf"multiple of\s*{v}",
        "minLength": rf"(?:(?:at least|exactly)\s*{v}\s*char|min(?:imum)?[ _-]?length\s*[:=]?\s*{v})",
        "maxLength": rf"(?:(?:at most|exactly)\s*{v}\s*char|max(?:imum)?[ _-]?length\s*[:=]?\s*{v})",
        "minItems": rf"(?:(?:at least|exactly)\s*{v}\s*(?:item|element|entr)|min(?:imum)?[ _-]?items\s*[:=]?\s*{v})",
        "maxItems": rf"(?:(?:at most|exactly)\s*{v}\s*(?:item|element|entr)|max(?:imum)?[ _-]?items\s*[:=]?\s*{v})",
        "minProperties": rf"(?:(?:at least|exactly)\s*{v}\s*(?:entr|propert|key)|min(?:imum)?[ _-]?properties\s*[:=]?\s*{v})",
        "maxProperties": rf"(?:(?:at most|exactly)\s*{v}\s*(?:entr|propert|key)|max(?:imum)?[ _-]?properties\s*[:=]?\s*{v})",
        "uniqueItems": r"unique",
        "pattern": re.escape(str(value)),
        "format": rf"(?:format\s*[:=]?\s*{v}|{v}\s*format)",
    }[key]
