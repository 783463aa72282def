"""transformers' `get_json_schema`, the function TRL reads tool methods with: what the model is
shown of each tool. The verifier's child (`orlgen.render.verify_child`) reads every rendered
method with it, and a trainer that shows the tools in its prompt (skyrl) writes what it gives.
Standard library only: the verifier's child imports this in an isolated interpreter.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

JsonSchema = Callable[[Callable[..., Any]], dict[str, Any]]


@functools.cache
def json_schema_reader() -> JsonSchema | None:
    """transformers' `get_json_schema`, the function TRL reads tool methods with, or None where
    transformers is not installed. Its module is loaded on its own (`_standalone`), which skips
    importing transformers (most of this child's CPU); where that fails, the package is imported.
    Generated hints never name torch or PIL types: their imports are skipped either way."""
    try:
        return _standalone()
    except Exception:  # another transformers layout: the package itself, as TRL imports it
        pass
    try:
        from transformers.utils import chat_template_utils
    except ImportError:
        return None
    setattr(chat_template_utils, "is_torch_available", lambda: False)  # noqa: B010 (not exported: mypy)
    setattr(chat_template_utils, "is_vision_available", lambda: False)  # noqa: B010
    return chat_template_utils.get_json_schema


_STANDALONE = "_orlgen_transformers"


def _standalone() -> JsonSchema:
    """`transformers/utils/chat_template_utils.py` executed under a private package name, with
    stand-ins for the two siblings it imports: `logging` (a standard logger) and `import_utils`
    (jinja available; no torch, no PIL). The code that reads the methods is transformers' own;
    tests/test_verify.py compares its schemas with the package's on every checked-in module."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("transformers is not installed")
    source = Path(next(iter(spec.submodule_search_locations))) / "utils" / "chat_template_utils.py"
    package, utils = ModuleType(_STANDALONE), ModuleType(f"{_STANDALONE}.utils")
    package.__path__, utils.__path__ = [], []
    log = ModuleType(f"{_STANDALONE}.utils.logging")
    log.get_logger = logging.getLogger  # type: ignore[attr-defined]
    flags = ModuleType(f"{_STANDALONE}.utils.import_utils")
    flags.is_jinja_available = lambda: True  # type: ignore[attr-defined]
    flags.is_torch_available = flags.is_vision_available = lambda: False  # type: ignore[attr-defined]
    utils.logging = log  # type: ignore[attr-defined]
    sys.modules.update({module.__name__: module for module in (package, utils, log, flags)})
    loaded = importlib.util.spec_from_file_location(f"{_STANDALONE}.utils.chat_template_utils", source)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    sys.modules[loaded.name] = module
    loaded.loader.exec_module(module)
    return module.get_json_schema  # type: ignore[no-any-return]
