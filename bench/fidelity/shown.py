"""Reading the JSON the model is shown: branches, types, parameters, description strings."""

from __future__ import annotations

import json
import re
from typing import Any

from orlgen.schema import json_type

from bench.fidelity.schema_walk import JSON


def shown_branches(node: Any) -> list[JSON]:
    if not isinstance(node, dict):
        return []
    alternatives = node.get("anyOf") or node.get("oneOf")
    if isinstance(alternatives, list):
        return [node] + [b for alt in alternatives for b in shown_branches(alt)]
    return [node]


def shown_types(node: Any) -> set[str]:
    found: set[str] = set()
    for b in shown_branches(node):
        t = b.get("type")
        found |= {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()
        if b.get("nullable") is True:
            found.add("null")
        if isinstance(b.get("enum"), list):
            found |= {json_type(v) for v in b["enum"]}
    return found


def same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def find_param(properties: JSON, wire: str) -> str | None:
    if wire in properties:
        return wire
    marked = [n for n, p in properties.items() if f"Sent as {wire!r}" in str(p.get("description", ""))]
    if len(marked) == 1:
        return marked[0]
    norm = re.sub(r"[^0-9a-z]", "", wire.lower())
    loose = [n for n in properties if re.sub(r"[^0-9a-z]", "", n.lower()) == norm]
    return loose[0] if len(loose) == 1 else None


def texts_of(fn: JSON) -> list[str]:
    """Every description string of a function's JSON."""
    found = [str(fn.get("description") or "")]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "description" and isinstance(v, str):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(fn.get("parameters"))
    walk(fn.get("return"))
    return found


def nested_nodes(out: JSON, rest: str) -> list[JSON]:
    """The shown schema's nodes at a nested path (`.field`, `[]` steps) below a parameter."""
    nodes = [out]
    for step in re.findall(r"\.[^.\[\]]+|\[\]", rest):
        nxt = []
        for node in nodes:
            for b in shown_branches(node):
                if step == "[]" and isinstance(b.get("items"), dict):
                    nxt.append(b["items"])
                elif step.startswith(".") and isinstance(b.get("properties"), dict) and step[1:] in b["properties"]:
                    nxt.append(b["properties"][step[1:]])
        nodes = nxt
    return nodes


def nested_structural(out: JSON, rest: str, types: str) -> bool:
    wanted = set(types.split(" | "))
    return any(wanted <= (shown_types(n) | {"any"}) for n in nested_nodes(out, rest))


def brief(out: JSON) -> str:
    shown = {k: v for k, v in out.items() if k != "description"}
    text = json.dumps(shown, sort_keys=True)
    return text if len(text) <= 100 else text[:97] + "..."
