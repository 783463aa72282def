"""Render only what changed: a file whose exact bytes on disk a verdict of the speed cache
(`orlgen.review.cache`) already records as the render of its inputs is kept as it is, unrendered.

`generate` and `snapshot` render through here, so re-generating a directory where one snapshot
changed runs black and the verifier for that snapshot's module (and its mixtures) only.
"""

from __future__ import annotations

from collections.abc import Sequence

from orlgen.disk import FileMap
from orlgen.render.jobs import Job
from orlgen.review.cache import Verdicts
from orlgen.review.files import is_regular


def split(jobs: Sequence[Job], verdicts: Verdicts | None) -> tuple[FileMap, list[Job]]:
    """(kept, stale): the bytes on disk of each job a verdict holds current, and every other job."""
    kept: FileMap = {}
    stale: list[Job] = []
    for job in jobs:
        actual = _current(job, verdicts)
        if actual is None:
            stale.append(job)
        else:
            kept[job.path] = actual
    return kept, stale


def remember(jobs: Sequence[Job], rendered: FileMap, verdicts: Verdicts | None) -> None:
    """Record the verdicts of files just rendered (and verified): their next render is skipped."""
    if verdicts is not None:
        for job in jobs:
            if job.path in rendered:
                verdicts.remember(job, rendered[job.path])


def _current(job: Job, verdicts: Verdicts | None) -> bytes | None:
    if verdicts is None or not is_regular(job.path):
        return None
    actual = job.path.read_bytes()
    return actual if verdicts.current(job, actual) else None
