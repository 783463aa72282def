"""The generator's one error root.

Every failure orlgen reports to a user is an `OrlgenError` whose message is one line that names
the file, tool or field at fault; the CLI catches this root (plus `OSError`) and prints it as
`orlgen: error: <line>` with exit code 2. Each kind of failure keeps its own subclass, defined
next to the code that raises it, so callers can still tell them apart; `CaptureError`,
`ConfigFileError` and `RefusedWrite` are here because modules of several stages raise them
(capture and recapture, the config and recapture, render and review), and a stage imports only
the stages below it. The runtime that
generated modules import has its own root (`orlgen.runtime.errors`), because it must not
import the generator.
"""

from __future__ import annotations


class OrlgenError(Exception):
    """A failure of the generator, explained in one line."""


class CaptureError(OrlgenError, RuntimeError):
    """The target cannot be captured; the message says why in one line."""


class ConfigFileError(OrlgenError, ValueError):
    """pyproject.toml's `[tool.orlgen]` table is not valid."""


class RefusedWrite(OrlgenError):
    """orlgen would write or remove a file that is not its own, or outside its directory."""
