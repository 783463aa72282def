"""Pydantic models from one datamodel-code-generator call, and the module's import block.

The bundle handed to datamodel-code-generator is built by the plan from sanitised schema nodes
(`orlgen.schema.emit_json`), so no generator extension, file reference or format that needs an extra
package can reach it. Its imports are merged with the template's into one block that imports
exactly the names the module uses, sorted as ruff's isort sorts them.
"""

from __future__ import annotations

import ast
import json
import sys
import warnings
from collections.abc import Iterable, Mapping

from orlgen.plan.planner import ModulePlan
from orlgen.runtime.errors import first_line
from orlgen.schema import SchemaError

IMPORT_MARKER = "__orlgen_imports__"
# What an env's models file may import beside its models' own imports (`templates/models.py.jinja`).
MODELS_IMPORTS: dict[str, tuple[str, ...]] = {
    "pathlib": ("Path",),
    "orlgen.runtime": ("Column", "DatasetSpec", "EnvSpec", "RewardRule", "Target"),
}
_ISORT_LINE_LENGTH = 88  # ruff's default: a longer import is written one name per line


def models(module_plan: ModulePlan) -> tuple[list[ast.stmt], str]:
    """The pydantic classes for every params model, and the imports they need (none without one:
    datamodel-code-generator refuses an empty bundle)."""
    if not module_plan.models_schema["$defs"]:
        return [], ""
    from datamodel_code_generator import DataModelType, InputFileType, LiteralType, PythonVersion
    from datamodel_code_generator import generate as dcg_generate
    from datamodel_code_generator.enums import NamingStrategy

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = dcg_generate(
                json.dumps(module_plan.models_schema),
                input_file_type=InputFileType.JsonSchema,
                output_model_type=DataModelType.PydanticV2BaseModel,
                target_python_version=PythonVersion.PY_311,
                naming_strategy=NamingStrategy.FullPath,
                skip_root_model=True,
                collapse_root_models=True,
                disable_timestamp=True,
                formatters=[],
                use_annotated=True,
                field_constraints=True,
                use_union_operator=True,
                use_schema_description=True,
                strict_nullable=True,
                allow_remote_refs=False,
                strict_refs=True,
                enum_field_as_literal=LiteralType.All,
                aliases=module_plan.models_aliases or None,
            )
    except Exception as exc:  # dcg raises many unrelated types
        raise SchemaError(f"datamodel-code-generator cannot model the schemas: {first_line(str(exc))}") from exc
    assert isinstance(source, str)  # given no output path, dcg returns the module's text
    return _split_imports(source)


def _split_imports(source: str) -> tuple[list[ast.stmt], str]:
    """dcg's output → its import statements, and everything after them."""
    tree = ast.parse(source)
    imports: list[ast.stmt] = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    if not rest:
        return imports, ""
    lines = source.split("\n")  # not splitlines(): \x1e and friends may stand inside a string literal
    first = rest[0].lineno - 1 - len(getattr(rest[0], "decorator_list", None) or [])
    return imports, "\n".join(lines[first:])


def with_imports(source: str, dcg_imports: Iterable[ast.stmt], template_imports: Mapping[str, tuple[str, ...]]) -> str:
    """`source` with its `IMPORT_MARKER` line replaced by imports of exactly the names it uses or
    exports (its `__all__`), among the models' imports and what its trainer's templates may import."""
    used: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):  # a model field `UNSET: str` uses nothing
            used.add(node.id)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            used.update(
                item.value
                for item in ast.walk(node.value)
                if isinstance(item, ast.Constant) and isinstance(item.value, str)
            )
    candidates = _candidates(dcg_imports, template_imports)
    wanted: dict[str, set[str]] = {}
    for module, members in candidates.items():
        for member in members:
            if member.split(" as ")[-1] in used:
                wanted.setdefault(module, set()).add(member)
    return source.replace(IMPORT_MARKER, _block(wanted), 1)


def _candidates(
    dcg_imports: Iterable[ast.stmt], template_imports: Mapping[str, tuple[str, ...]]
) -> dict[str, set[str]]:
    found = {module: set(members) for module, members in template_imports.items()}
    for node in dcg_imports:
        if isinstance(node, ast.ImportFrom) and node.module not in (None, "__future__"):
            found.setdefault(node.module, set()).update(_alias(alias) for alias in node.names)
    return found


def _block(wanted: dict[str, set[str]]) -> str:
    """Import lines grouped standard library / third party, sorted like ruff's isort
    (`order-by-type`: CONSTANTS, then Classes, then functions)."""
    groups: list[list[str]] = [[], []]
    for module in sorted(wanted, key=str.lower):
        plain = sorted((m for m in wanted[module] if " as " not in m), key=_member_key)
        renamed = sorted((m for m in wanted[module] if " as " in m), key=_member_key)
        group = groups[0 if module.split(".")[0] in sys.stdlib_module_names else 1]
        group += [_from_import(module, plain)] if plain else []
        group += [_from_import(module, [member]) for member in renamed]  # ruff keeps `as` imports apart
    return "\n\n".join("\n".join(group) for group in groups if group)


def _from_import(module: str, members: list[str]) -> str:
    line = f"from {module} import {', '.join(members)}"
    if len(line) <= _ISORT_LINE_LENGTH:
        return line
    return f"from {module} import (\n" + "".join(f"    {name},\n" for name in members) + ")"


def _member_key(member: str) -> tuple[int, str]:
    name = member.split(" as ")[0]
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name


def _alias(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
