"""A task schema → the generated dataset's columns: names clear of the reserved ones, and
which fields are stored as JSON text because no one Arrow type holds them exactly (a type that
varies across tasks, or a dict whose keys do)."""

from __future__ import annotations

from dataclasses import dataclass

from orlgen.plan.reserved import RESERVED_COLUMN_NAMES
from orlgen.plan.source import Source, literal
from orlgen.runtime.data.dataset import RESERVED_PREFIX
from orlgen.schema import Node, Schema


@dataclass(frozen=True)
class ColumnPlan:
    name: Source
    field: Source
    as_json: bool


_ARROW_DEPTH = 16  # nested levels a task field may have and still be one Arrow column


def dataset_columns(task_schema: Schema) -> tuple[ColumnPlan, ...]:
    root = task_schema.resolve(task_schema.root)
    taken = set(RESERVED_COLUMN_NAMES)  # every trainer's: one plan serves them all
    out = []
    for field, node in sorted(root.properties):
        name = field
        while name in taken:
            name = f"{RESERVED_PREFIX}{name}"
        taken.add(name)
        out.append(ColumnPlan(literal(name), literal(field), not _arrow_safe(node, task_schema)))
    return tuple(out)


def _arrow_safe(node: Node, schema: Schema, depth: int = 0) -> bool:
    """Whether every value the schema admits fits one Arrow type (nulls aside). A recursive
    shape has no fixed Arrow type: past a few levels it is stored as JSON text."""
    if depth > _ARROW_DEPTH:
        return False
    concrete = [b for b in schema.branches(node) if schema.json_types(b) != {"null"}]
    if len(concrete) == 1 and len(schema.branches(node)) > 1:
        return _arrow_safe(concrete[0], schema, depth + 1)
    types = schema.json_types(node) - {"null"}
    if types == {"integer", "number"}:
        return True
    if len(types) != 1:
        return False
    (kind,) = types
    node = schema.resolve(node)
    if kind == "object":
        return _fixed_keys(node) and all(_arrow_safe(sub, schema, depth + 1) for _, sub in node.properties)
    if kind == "array":
        return node.items is None or _arrow_safe(node.items, schema, depth + 1)
    return True


def _fixed_keys(node: Node) -> bool:
    """Whether every object `node` admits has exactly its listed properties. An Arrow struct has
    one set of keys and fills a dict's missing ones with None, so a dict whose keys vary between
    tasks would come back with keys the env never gave. A snapshot's task schema is genson's
    inference over the tasks read: a key some task's dict lacks is left out of `required`; an
    empty dict lists no property; and a declared `additionalProperties` admits unlisted keys."""
    listed = {name for name, _ in node.properties}
    return bool(listed) and listed <= set(node.required) and (node.additional is None or node.additional is False)
