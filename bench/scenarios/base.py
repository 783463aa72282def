"""What the scenarios share: the table row, the helpdesk tasks, worker children."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import HELPDESK_SNAPSHOT, PY, ChildRun, Served, child_env, run_child
from bench.trl_side import trl_env


@dataclass
class Row:
    id: str
    scenario: str
    case: str
    metric: str
    unit: str  # "s", "ms", "MB", "req", "/s", "facts", "%"
    orlgen: float | None
    trl: float | None = None
    target: str = ""
    met: bool | None = None  # None: no target
    note: str = ""
    lower_is_better: bool = True
    samples: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.orlgen is None or self.trl in (None, 0):
            return None
        return self.orlgen / self.trl

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def helpdesk_specs() -> list[dict[str, Any]]:
    from orlgen.snapshot.model import load

    return [task.spec for task in load(HELPDESK_SNAPSHOT).tasks["train"].tasks]


def run_worker(
    command: str, side: str, served: Served, module: Path | None, extra: Sequence[str] = ()
) -> tuple[ChildRun, dict[str, Any]]:
    """`python -m bench.worker COMMAND SIDE URL` against `served` (orlgen: `--module`; TRL: its
    addressing), and the requests the server counted meanwhile."""
    args = [PY, "-m", "bench.worker", command, side, served.url, *extra]
    if side == "orlgen":
        args += ["--module", str(module)]
    with served.counting() as counts:
        run = run_child(args, env=trl_env(served.url) if side == "trl" else child_env())
    return run, counts
