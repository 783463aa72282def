"""The snapshot: the one intermediate form (interface and tasks files) and its schema's JSON helpers.

`__all__` names its public modules, the ones other packages import (a test holds every import
from outside to them); the others are this package's own.
"""

__all__ = ["model", "recorded"]
