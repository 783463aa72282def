"""`int | float` in generated hints, kept, and said so to ruff.

A parameter whose schema allows "integer" and "number" is hinted `int | float`: that is how
`transformers.utils.get_json_schema` shows the model both types (`float` alone shows only
"number"). flake8-pyi's PYI041 (in ruff) calls the `int` redundant; a module that holds such a
union says, once, that it is meant, so that a user's ruff with PYI rules passes as it is.
"""

from __future__ import annotations

import ast

DIRECTIVE = "# ruff: noqa: PYI041 - `int | float` is meant: get_json_schema shows the model both types\n"
_ANCHOR = "from __future__ import annotations\n"


def allow_numeric_unions(source: str) -> str:
    """`source` with the directive before its first import when a union names both types."""
    if not _has_numeric_union(ast.parse(source)) or _ANCHOR not in source:
        return source
    return source.replace(_ANCHOR, DIRECTIVE + "\n" + _ANCHOR, 1)


def _has_numeric_union(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            names = {part.id for part in _union_parts(node) if isinstance(part, ast.Name)}
            if {"int", "float"} <= names:
                return True
    return False


def _union_parts(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_parts(node.left) + _union_parts(node.right)
    return [node]
