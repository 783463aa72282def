"""The wire's errors: what an ORS server's answer (or its silence) means, as exceptions the layers
above catch by type. A leaf of the wire, without aiohttp, so a caller that only tells errors
apart imports no network client."""

from __future__ import annotations

from ..errors import OrlgenRuntimeError, ServerDead


class StatusError(OrlgenRuntimeError):
    """The server answered with an HTTP error status (`status`, the server's `detail`)."""

    def __init__(
        self, status: int, detail: str, retry_after: float | None = None, starting: bool = False, said: str = ""
    ) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.said = said or detail  # the detail as sent, lines kept (capture shows its last line)
        self.retry_after = retry_after
        self.backend_starting = starting


class ServerGone(ServerDead):
    """The server refused connections for longer than `REFUSED_WINDOW` (it is not running)."""


class SessionGone(OrlgenRuntimeError):
    """The server no longer knows the session (404 or 410 on a session request)."""


class StreamBroken(OrlgenRuntimeError):
    """A stream ended before its `end` event."""


class ToolRaised(OrlgenRuntimeError):
    """The tool raised on the server (an SSE `error` event): the rollout cannot go on."""


class PaymentRequired(OrlgenRuntimeError):
    """The OpenReward account behind the API key cannot pay for the environment."""


def payment_required() -> PaymentRequired:
    """The one line for a 402, at a session's opening or at any later request."""
    return PaymentRequired(
        "402 Payment Required: the OpenReward account of this API key has no credit left "
        "for this environment; fund it (or use another key) and rerun"
    )


class ToolRefused(OrlgenRuntimeError):
    """The server did not run the call (`ok: false`): `reason` and the server's `detail`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
