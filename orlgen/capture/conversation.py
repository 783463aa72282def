"""Whether an environment is conversation-shaped, read from capture's probe sessions.

ORS environments (SDK >= 0.1.157) may serve their prompt as role-tagged messages
(`get_messages`: a system prompt, earlier turns) instead of one `get_prompt` text; the server then
serves a flattened `/prompt` for older clients, where the roles are lost. The snapshot records
the shape, so the generated adapter reads messages, and the probed tasks' system message when
they all open with the same one, so `build_dataset` can put it in the `prompt` column as a
system turn (the one place TRL takes roles from; see docs/training.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Conversation:
    shaped: bool  # more than one message, or a role other than user
    system: str | None  # the text of a leading system message made of text blocks only


def conversation_of(messages: list[Any]) -> Conversation:
    """What one probe session's messages show. A server without `/messages` (SDK < 0.1.157)
    answers through the client's fallback, one user message: not conversation-shaped."""
    shaped = len(messages) != 1 or getattr(messages[0], "role", "user") != "user"
    return Conversation(shaped, _system_text(messages[0]) if shaped and messages else None)


def conversation_fields(seen: list[Conversation]) -> dict[str, Any]:
    """The snapshot's `conversation` and `system_prompt`: shaped if any probe was; the system
    prompt only when every probe showed the same one (a per-task one is read at `reset`)."""
    if not any(c.shaped for c in seen):
        return {}
    systems = {c.system for c in seen}
    return {"conversation": True, "system_prompt": systems.pop() if len(systems) == 1 else None}


def _system_text(message: Any) -> str | None:
    blocks = list(getattr(message, "blocks", None) or ())
    if getattr(message, "role", None) != "system" or not blocks:
        return None
    if not all(
        getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str) for block in blocks
    ):
        return None
    return "\n".join(block.text for block in blocks) or None
