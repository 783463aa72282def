"""Capture: the stage that talks to an ORS server, and capturing again as a snapshot was captured.

`__all__` names its public modules, the ones other packages import (a test holds every import
from outside to them); the others are this package's own.
"""

__all__ = ["live", "options", "recapture", "shadowing", "targets", "toolsets"]
