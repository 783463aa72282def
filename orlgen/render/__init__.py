"""Render: a plan through the templates, datamodel-code-generator and black to source, verified in a child.

`__all__` names its public modules, the ones other packages import (a test holds every import
from outside to them); the others are this package's own.
"""

__all__ = ["deadline", "header", "jobs", "lock", "sandbox", "verify"]
