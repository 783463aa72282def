"""`--upload RUN_NAME`: the run's rollouts, posted to OpenReward's rollout API.

The events, their batches, the bounded post and the API's address are the runtime's
(`orlgen.runtime.ors.rollouts`, shared with the training uploader); what is eval's here: a
rollout is named `env/split/task/sample`, its `run_info` says `run_type: "eval"`, every row of the
run is posted at once, and a failure is an `EvalError`.

Uploading happens after the run, from the rows as written (secrets masked): a failure is one
line and exit 2, and the local rows are already safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orlgen.runtime.ors import rollouts
from orlgen.runtime.ors.rollouts import Retry, batches, events, run_info

from .errors import EvalError

__all__ = ["Retry", "Target", "UploadFailed", "batches", "events", "run_info", "upload"]


class UploadFailed(EvalError):
    """The rollout API refused a batch or did not answer; the local rows are kept."""


class Target(rollouts.Target):
    """The rollout API's address and key, resolved for `--upload`."""

    @classmethod
    def from_env(cls, needed_by: str = "--upload") -> Target:
        """The API host as the SDK resolves it, and `$OPENREWARD_API_KEY` (required)."""
        try:
            found = rollouts.Target.from_env(needed_by)
        except rollouts.RolloutAPIError as exc:
            raise EvalError(str(exc)) from None
        return cls(found.url, found.key)


def upload(
    rows: Iterable[dict[str, Any]],
    run_name: str,
    target: rollouts.Target,
    info: dict[str, Any],
    sampling: dict[str, Any],
    *,
    timeout: float = 30.0,
    retry: Retry | None = None,
) -> int:
    """Post every rollout of `rows`; the number of events sent. Raises `UploadFailed` (one line,
    the key masked) at the first batch the API refuses (4xx), keeps failing (5xx), or leaves
    unanswered for `timeout` seconds."""
    built = [events(row, run_name, info, sampling) for row in rows]
    try:
        return rollouts.send(built, target, timeout=timeout, retry=retry or Retry(), agent="orlgen-eval")
    except rollouts.UploadFailed as exc:
        raise UploadFailed(str(exc)) from exc
