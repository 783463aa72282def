"""Field names for the generated models' property names that Python would misread."""

from __future__ import annotations

from typing import Any

from orlgen import names
from orlgen.schema import JSON

# Names the models' annotations use, imported or builtin: a field named like one shadows it in its
# class for the annotations after it (`str: ...` then `dict[str, Any]`).
_SHADOWING = frozenset(
    {"Annotated", "Any", "BaseModel", "ConfigDict", "Field", "Literal", "RootModel"}
    | {"bool", "dict", "float", "int", "list", "str"}
)


def field_aliases(bundle: JSON) -> dict[str, str]:
    """Field names for property names Python would misread: it reads identifiers NFKC-normalised
    (`ﬁle` is `file`), so a field named as the property would expect another key on the wire;
    and a field named `Literal` would shadow the `Literal` of the annotations after it. With an
    explicit field name, datamodel-code-generator keeps the property as the alias."""
    found: set[str] = set()

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict):
                found.update(node["properties"])
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for item in node:
                collect(item)

    collect(bundle)
    misleading = names.lookalikes(sorted(found))  # `раth` beside `path` in one module's models
    misread = sorted(
        name for name in found if (not name.isascii() and not _stable(name)) or name in _SHADOWING or name in misleading
    )
    # The names datamodel-code-generator gives the other fields (`if` → `if_`, `a-b` → `a_b`).
    plain = [name for name in found if name.isascii() and name not in _SHADOWING]
    taken = {variant for name in plain for base in (name, names.snake_case(name)) for variant in (base, f"{base}_")}
    aliases: dict[str, str] = {}
    for name in misread:
        aliases[name] = names.identifier(name, taken=taken | _SHADOWING)
        taken.add(aliases[name])
    return aliases


def _stable(name: str) -> bool:
    try:
        names.ParamName(name)
    except ValueError:
        return False
    return True
