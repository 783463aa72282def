"""Review: what generated files orlgen owns, writes and checks, and how snapshots differ.

`__all__` names its public modules, the ones other packages import (a test holds every import
from outside to them); the others are this package's own.
"""

__all__ = ["cache", "check", "diff", "files", "identity", "incremental", "layout", "shadows", "targets", "vet"]
