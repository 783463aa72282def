"""Plan: every Python name, type and docstring of a module decided once, from a snapshot.

`__all__` names its public modules, the ones other packages import (a test holds every import
from outside to them); the others are this package's own.
"""

__all__ = ["docstrings", "hints", "json_schema", "planner", "reserved", "sorting", "source"]
