"""How a generated mixture module imports its members: the generated modules next to it.

Not with `from . import echo`: that needs a parent package, so the mixture would import only as
`generated.support_mix` and `mypy generated/` (which reads a directory without `__init__.py` as
top-level modules) would fail on it. `siblings` finds each member in the mixture's own package
when it has one, else as the top-level module of that name when that is the file next to it,
else loads that file; nothing but that file is ever imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import zlib
from pathlib import Path
from types import ModuleType


def siblings(package: str | None, file: str, *names: str) -> tuple[ModuleType, ...]:
    """The modules `names` from the directory of `file` (a mixture's `__package__`, `__file__`)."""
    return tuple(_sibling(package, Path(file).resolve().with_name(f"{name}.py"), name) for name in names)


def _sibling(package: str | None, path: Path, name: str) -> ModuleType:
    if package:
        return importlib.import_module(f"{package}.{name}")
    spec = importlib.util.find_spec(name)  # finds without running anything
    if spec is not None and spec.origin is not None and Path(spec.origin).resolve() == path:
        return importlib.import_module(name)
    key = f"_orlgen_sibling_{zlib.crc32(str(path).encode()):08x}_{name}"  # one module per file
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"no generated module {name!r} next to {path.parent}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
