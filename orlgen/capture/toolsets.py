"""The built-in session toolsets a capture may open its probe sessions with (`--toolset`).

The openreward SDK's names (`_VALID_BUILTIN_TOOLSETS`, 0.1.167; tests/test_surfaces.py holds them
equal), kept in a module of their own so that the CLI's `--help` and the config need no SDK.
"""

from __future__ import annotations

from typing import Literal, get_args

Toolset = Literal["backsearch", "claude-code", "codex", "gemini-cli", "hermes", "openclaw"]
TOOLSETS: tuple[str, ...] = get_args(Toolset)
