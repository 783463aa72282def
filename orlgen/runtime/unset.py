"""`UNSET`: the default of every optional tool parameter of a generated module, meaning "not
given", so nothing is sent for it. A leaf, so the core and every shim can tell it apart."""

from __future__ import annotations

from typing import Any, ClassVar


class _Unset:
    """One instance, which pickles and prints as `UNSET`."""

    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
