"""Finished rollouts of a training run, posted to OpenReward's rollout API in the background.

Trainer-neutral: TRL's reward-step hook (`orlgen.runtime.trl.upload`) feeds it, and so can any
loop that ends with a conversation and a reward (the agent loop's `Trajectory`, a skyrl or verl
rollout): `RolloutUploader.upload(rollout, global_step=...)` takes a mapping or an object with
`messages`, `reward` and the task (`env`, `split`, `task_index`), and returns at once.

Why a thread and a bound. A training step must never wait for a platform: `upload` only appends
to a bounded queue (`max_queue` rollouts; a full queue drops the rollout, counts it in `dropped`
and says so in one warning line, the first time) and one daemon thread does the rest: it takes
what is queued (up to 64 rollouts at a time), masks secrets, builds the events
(`orlgen.runtime.ors.rollouts`, the same code `eval --upload` posts with) and posts them under
that module's bounds (a deadline per request, the SDK's retries, no redirect to another origin).
Nothing is raised into training. Counted per rollout: one that cannot be built or encoded (a
value that is not JSON, a message that is not a mapping) is `failed` alone, said in one line
(the first such one; later ones are counted), and the others go; a post that fails part way
counts as `sent` the rollouts whose every event went out before it, the rest `failed`, said in
one line (once per outage: again only after a post succeeded). `close(timeout)` flushes with a
bounded wait and returns the counts; what is still queued or in flight then is `pending`. The
worker ends once `close` has drained the queue; an `upload` after that (a later evaluation)
starts another.

Names, resumable per run and rank: `{run_name}/rank{rank}/step{global_step}/{index}`, `index`
counting this uploader's rollouts of that step (dropped ones too, so a name always means the
same rollout of the step). A run resumed from its checkpoint at step S starts again at step S,
so it names no rollout of an earlier step again; the event ids are derived from the name
(uuid5), so a step the resumed run plays again (one that ran after the checkpoint, before the
stop) is posted under the same rollout name and ids as the lost attempt: the API can tell it is
the same rollout rather than a second one. Ranks never share a name.

Secrets: every string of a rollout is masked (`orlgen.runtime.redaction.redact`: credentials in
URLs, and every given value) before it leaves the process: the platform key, the uploader's
`secrets`, and the values given with each rollout (the episode's own secret values).
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..redaction import redact
from . import rollouts
from .rollouts import Retry, Target

logger = logging.getLogger("orlgen")

MAX_ROLLOUTS_PER_POST = 64  # rollouts taken off the queue at once (their events go in batches of 128 / 1 MB)
_NAMESPACE = "6f1c2a44-6c0e-5b1e-9a57-0a1f0e6b7c21"  # the uuid5 namespace of orlgen's training rollouts


@dataclass(frozen=True)
class UploadStats:
    """What an uploader did with the rollouts it was given (`recorded`): `sent` (the API took
    them), `failed` (a post failed), `dropped` (the queue was full), `pending` (queued or in
    flight now)."""

    recorded: int = 0
    sent: int = 0
    failed: int = 0
    dropped: int = 0
    pending: int = 0


@dataclass(frozen=True)
class _Job:
    row: dict[str, Any]
    name: str
    secrets: tuple[str, ...] = field(repr=False)


class RolloutUploader:
    """Posts finished rollouts of one run (`run_name`) from one rank to the rollout API, in the
    background, within `max_queue` rollouts of memory.

    `target`: the API (default `$OPENREWARD_API_URL` / `$OPENREWARD_URL` and
    `$OPENREWARD_API_KEY`, as the SDK resolves them); `rank`: this process's rank (default
    `$RANK`, else 0); `model`: the model's name in the run's `run_info`; `secrets`: values to mask
    in every rollout, beside the platform key; `timeout`: each request's deadline (seconds);
    `sampling`: the sampling parameters each rollout's `rollout_info` carries."""

    def __init__(
        self,
        run_name: str,
        *,
        target: Target | None = None,
        rank: int | None = None,
        model: str = "",
        secrets: Iterable[str] = (),
        max_queue: int = 1024,
        timeout: float = 30.0,
        retry: Retry | None = None,
        sampling: Mapping[str, Any] | None = None,
    ) -> None:
        if not run_name or not isinstance(run_name, str):
            raise ValueError(f"run_name={run_name!r}: a rollout upload needs the run's name")
        if max_queue < 1:
            raise ValueError(f"max_queue={max_queue!r} is not a positive integer")
        from orlgen import __version__

        self.run_name = run_name
        self.target = target if target is not None else Target.from_env("uploading training rollouts")
        self.rank = int(os.environ.get("RANK", "0")) if rank is None else rank
        self.max_queue = max_queue
        self.timeout = timeout
        self.retry = retry or Retry()
        self.info = rollouts.run_info(model, __version__, run_type="train")
        self.sampling = dict(sampling or {})
        self._secrets = (self.target.key, *secrets)
        self._cond = threading.Condition()
        self._queue: collections.deque[_Job] = collections.deque()
        self._in_flight = 0
        self._counts: collections.Counter[str] = collections.Counter()
        self._next_index: dict[int, int] = {}
        self._closing = False  # close() asked the worker to end once the queue is empty
        self._running = False  # a worker serves the queue: set by upload(), cleared by the worker as it ends
        self._failing = False  # a post failed and none has succeeded since: said once
        self._said_unencodable = False
        self._worker: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"RolloutUploader({self.run_name!r}, rank={self.rank}, {self.target!r})"

    def __enter__(self) -> RolloutUploader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def name(self, global_step: int, index: int) -> str:
        """The rollout name of the `index`-th rollout of `global_step` on this rank."""
        return f"{self.run_name}/rank{self.rank}/step{global_step}/{index}"

    def upload(self, rollout: Any, *, global_step: int, env: str | None = None, secrets: Iterable[str] = ()) -> bool:
        """Queue one finished rollout (a mapping, or an object such as the agent loop's
        `Trajectory`: `messages`, `reward`, `env`, `split`, `task_index`, and optionally
        `rewards`, `outcome`, `stop`, `tool_calls`, `tool_errors`); never blocks. `env` names the
        environment where the rollout has no `env`; `secrets`: more values to mask in it. False
        when the queue was full and the rollout was dropped."""
        row = _row(rollout)
        if env is not None:
            row["env"] = env
        with self._cond:
            index = self._next_index.get(global_step, 0)
            self._next_index[global_step] = index + 1
            self._counts["recorded"] += 1
            queued = len(self._queue) < self.max_queue
            if queued:
                row |= {"global_step": global_step, "rank": self.rank, "index": index}
                self._queue.append(_Job(row, self.name(global_step, index), tuple(secrets)))
                self._cond.notify()
                self._start_worker()
            else:
                self._counts["dropped"] += 1
            first_drop = not queued and self._counts["dropped"] == 1
        if first_drop:
            logger.warning(
                "rollout upload: the queue of %d rollouts is full (the API at %s is slower than training): "
                "rollouts are dropped, counted in orlgen/upload_dropped",
                self.max_queue,
                self.target.public,
            )
        return queued

    @property
    def stats(self) -> UploadStats:
        """The counts now."""
        with self._cond:
            counts = self._counts
            return UploadStats(
                counts["recorded"],
                counts["sent"],
                counts["failed"],
                counts["dropped"],
                len(self._queue) + self._in_flight,
            )

    def close(self, timeout: float = 30.0) -> UploadStats:
        """Send what is queued, waiting at most `timeout` seconds, and return the counts (what
        was not sent by then is `pending`). One line says them when anything was not sent. A
        later `upload` starts the worker again."""
        with self._cond:
            self._closing = self._running  # no worker: nothing to end
            self._cond.notify_all()
            worker = self._worker
        if worker is not None:
            worker.join(timeout)
        stats = self.stats
        if stats.failed or stats.dropped or stats.pending:
            logger.warning(
                "rollout upload of run %r: %d of %d rollouts sent to %s (%d failed, %d dropped, %d still pending)",
                self.run_name,
                stats.sent,
                stats.recorded,
                self.target.public,
                stats.failed,
                stats.dropped,
                stats.pending,
            )
        return stats

    def _start_worker(self) -> None:
        """A worker, unless one serves the queue (under the lock). `_running`, not the thread's
        `is_alive()`: a worker that has decided to end is alive a moment longer, and a rollout
        queued then would wait for a later one."""
        if not self._running:
            self._running = True
            self._worker = threading.Thread(target=self._work, name="orlgen-rollout-upload", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue:  # closed and drained: the next upload() starts another worker
                    self._running = self._closing = False
                    return
                jobs = [self._queue.popleft() for _ in range(min(MAX_ROLLOUTS_PER_POST, len(self._queue)))]
                self._in_flight = len(jobs)
            sent, failed = self._post(jobs)
            with self._cond:
                self._in_flight = 0
                self._counts["sent"] += sent
                self._counts["failed"] += failed

    def _post(self, jobs: list[_Job]) -> tuple[int, int]:
        """Post `jobs`: (rollouts sent, rollouts failed). A rollout that cannot be encoded fails
        alone; whatever fails is one line, never an exception."""
        encoded = [events for job in jobs if (events := self._encoded(job)) is not None]
        unencodable = len(jobs) - len(encoded)
        if not encoded:
            return 0, unencodable
        try:
            rollouts.send_encoded(encoded, self.target, timeout=self.timeout, retry=self.retry, agent="orlgen-train")
        except Exception as exc:  # a post's failure: never training's
            sent = exc.rollouts_sent if isinstance(exc, rollouts.UploadFailed) else 0
            if not self._failing:
                self._failing = True
                logger.warning("rollout upload: %d rollouts not sent: %s", len(encoded) - sent, self._said(exc))
            return sent, len(encoded) - sent + unencodable
        self._failing = False
        return len(encoded), unencodable

    def _encoded(self, job: _Job) -> list[bytes] | None:
        """`job`'s events, masked and encoded; None (said once) when the rollout cannot be."""
        try:
            built = rollouts.events(
                _masked(job.row, (*self._secrets, *job.secrets)),
                self.run_name,
                self.info,
                self.sampling,
                name=job.name,
                harness="orlgen train",
                metadata_keys=rollouts.TRAIN_METADATA_KEYS,
                new_id=_ids(self.run_name, job.name),
            )
            return [rollouts.encode(event) for event in built]
        except Exception as exc:  # a rollout we were given that is not JSON: that one is lost, the others go
            if not self._said_unencodable:
                self._said_unencodable = True
                logger.warning("rollout upload: rollout %s cannot be sent: %s", job.name, self._said(exc))
            return None

    def _said(self, exc: BaseException) -> str:
        """`exc` as the first line of its text, secrets masked."""
        said = redact(f"{type(exc).__name__}: {exc}", self._secrets).splitlines()
        return said[0] if said else ""


def _row(rollout: Any) -> dict[str, Any]:
    """A rollout as the row the events are built from: a mapping's items, or an object's
    attributes of those names; `env` defaults to "unknown", `split` to "train"."""
    keys = ("env", "split", "task_index", "messages", "reward", "rewards", "outcome", "stop", "tool_calls")
    if isinstance(rollout, Mapping):
        row = dict(rollout)
    else:
        row = {key: getattr(rollout, key) for key in (*keys, "tool_errors") if hasattr(rollout, key)}
    row["messages"] = list(row.get("messages") or [])
    row.setdefault("env", "unknown")
    row["split"] = row.get("split") or "train"
    row.setdefault("task_index", None)
    return row


def _masked(value: Any, secrets: tuple[str, ...]) -> Any:
    """`value` with every string masked (credentials in URLs, every value of `secrets`)."""
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, dict):
        return {key: _masked(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item, secrets) for item in value]
    return value


def _ids(run_name: str, name: str) -> Callable[[], str]:
    """Event ids derived from the rollout's name: the rollout's, then one per message in order."""
    base = uuid.uuid5(uuid.UUID(_NAMESPACE), f"{run_name}\n{name}")
    count = itertools.count()
    return lambda: str(base) if (n := next(count)) == 0 else str(uuid.uuid5(base, str(n)))
