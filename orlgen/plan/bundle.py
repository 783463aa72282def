"""The `$defs` bundle of a module's models: one datamodel-code-generator call for all of them.

Each schema's definitions get class names of their own (`<Tool>Params<Def>`), numbered when two
would collide, so no tool can validate against another tool's definition. Then every object
shape that occurs more than once (the same nested order in two task fields, the same address in
two places) becomes one shared definition, so the module declares each model once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from orlgen import names
from orlgen.names import ClassName
from orlgen.plan.emit import emit_json
from orlgen.schema import JSON, Schema

# Usage-site keywords: a property's own description and default are not part of its shape.
_USAGE = ("description", "default")


class Bundle:
    def __init__(self, taken: frozenset[str]) -> None:
        self.taken: set[str] = names.Taken(taken)  # linear renaming of many look-alike models
        self.entries: dict[str, JSON] = {}
        self.roots: set[str] = set()  # classes the module names (params models)

    def add(self, class_name: ClassName, schema: Schema) -> None:
        """`schema` as the model `class_name`, its definitions beside it."""
        self.taken.add(class_name)
        self.roots.add(class_name)
        moved = {"": str(class_name)}
        for name in schema.defs:
            moved[name] = names.class_name(f"{class_name}{names.class_name(name)}", taken=self.taken)
            self.taken.add(moved[name])

        def ref(name: str) -> str:
            return f"#/$defs/{moved[name]}"

        self.entries[class_name] = emit_json(schema, schema.root, ref)
        for name, node in schema.defs.items():
            self.entries[moved[name]] = emit_json(schema, node, ref)

    def definitions(self) -> JSON:
        """Every entry, each repeated object shape shared, in name order."""
        entries = dict(sorted(self.entries.items()))
        while _share_one(entries, self.taken, self.roots):
            entries = dict(sorted(entries.items()))
        return entries


def _share_one(entries: dict[str, JSON], taken: set[str], roots: set[str]) -> bool:
    """Turn the largest object shape that occurs twice into one definition; False if none does."""
    found: dict[str, list[tuple[str, list[Any]]]] = {}
    for entry, schema in entries.items():
        for path, shape in _objects(schema, [], top=True):
            found.setdefault(_key(shape), []).append((entry, path))
    defined = {_key(schema): name for name, schema in entries.items() if name not in roots}
    repeated = [(key, places) for key, places in found.items() if len(places) > 1 or key in defined]
    if not repeated:
        return False
    key, places = max(repeated, key=lambda item: (len(item[0]), item[0]))
    name = defined.get(key)
    if name is None:
        entry, path = places[0]
        name = names.class_name(entry + _words(path), taken=taken)
        taken.add(name)
        entries[name] = _shape(_at(entries[entry], path))
    for entry, path in places:
        _replace(entries[entry], path, f"#/$defs/{name}")
    return True


def _objects(schema: Any, path: list[Any], top: bool = False) -> Iterator[tuple[list[Any], JSON]]:
    """Every inline object schema with named properties (not the entry itself), with its path."""
    if isinstance(schema, dict):
        if not top and isinstance(schema.get("properties"), dict) and "$ref" not in schema:
            yield path, schema
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from _objects(sub, [*path, key, name])
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                yield from _objects(value, [*path, key])
            elif key in ("anyOf", "allOf", "prefixItems") and isinstance(value, list):
                for i, sub in enumerate(value):
                    yield from _objects(sub, [*path, key, i])


def _shape(schema: JSON) -> JSON:
    return {key: value for key, value in schema.items() if key not in _USAGE}


def _key(schema: JSON) -> str:
    return json.dumps(_shape(schema), sort_keys=True)


def _at(schema: Any, path: list[Any]) -> Any:
    for part in path:
        schema = schema[part]
    return schema


def _replace(schema: Any, path: list[Any], ref: str) -> None:
    parent = _at(schema, path[:-1])
    usage = {key: parent[path[-1]][key] for key in _USAGE if key in parent[path[-1]]}
    parent[path[-1]] = {"$ref": ref, **usage}


def _words(path: list[Any]) -> str:
    """A class-name suffix from a path: the property names on it, an array's items singular."""
    words: list[str] = []
    for i, part in enumerate(path):
        if i and path[i - 1] == "properties":
            words.append(names.class_name(part))
        elif part == "items" and words:
            words[-1] = _singular(words[-1])
    return "".join(words)


def _singular(word: str) -> str:
    for plural, singular in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if word.endswith(plural):
            return word[: -len(plural)] + singular
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word
