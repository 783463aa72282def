"""Importing a Python file as a module: generated modules written by a run, in this process or
in a worker child (which imports nothing else before its clock starts)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any


def load_module(path: Path, name: str, *, keep: bool = True) -> Any:
    """The module of the file at `path`, named `name`; it is in `sys.modules` while it runs (as
    for any import) and after it only if `keep`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        if not keep:
            sys.modules.pop(name, None)
    return module
