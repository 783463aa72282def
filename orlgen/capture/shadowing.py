"""A generated module named like one of the env's own files (`zebra.py` beside the
`zebra:Zebra` it serves) hides that file wherever both directories are on a flat `sys.path`:
the env's `server.py` then imports the adapter instead of its environment. Published envs often
keep their files flat (8 of 20 measured), so a capture of a `module:EnvClass` target says so."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from orlgen.snapshot.model import Target


def shadowed_file(target: Target, name: str) -> Path | None:
    """The env's own file or package that a generated module `name` would hide, if any: a
    module of that name beside the target's top-level module (`zebra:Zebra`), whose directory
    is the flat one on `sys.path`; a dotted target (`examples.echo:Echo`) imports its siblings
    through its package, which a generated module cannot hide. `find_spec` of a top-level
    module runs none of its code."""
    module = target.value.partition(":")[0]
    if target.kind != "module" or "." in module:
        return None
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    directory = Path(spec.origin).parent
    if spec.submodule_search_locations is not None:  # a package: its siblings are beside it
        directory = directory.parent
    for candidate in (directory / f"{name}.py", directory / name / "__init__.py"):
        if candidate.is_file():
            return candidate if candidate.name != "__init__.py" else candidate.parent
    return None


def shadow_warning(target: Target, name: str) -> str | None:
    """The warning for a module `name` that would hide one of the env's files, saying how out."""
    found = shadowed_file(target, name)
    if found is None:
        return None
    shown = os.path.relpath(found) if found.is_relative_to(Path.cwd()) else str(found)
    return (
        f"the generated module {name}.py has the name of the env's own {shown}: where both directories are on "
        f"sys.path, one hides the other (the env's own imports of {name!r} get the adapter); capture it under "
        f"another name with --name {name}_env"
    )
