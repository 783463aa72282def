"""What the scenarios share: the table row, progress lines, the helpdesk module and snapshot."""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    PY,
    REPO,
)

ORLGEN_CLI = str(Path(PY).with_name("orlgen"))
HELPDESK_MODULE = REPO / "generated" / "helpdesk.py"
HELPDESK_SNAPSHOT = REPO / "generated" / "helpdesk.snapshot.json"


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


def log(message: str) -> None:
    print(f"  · {message}", file=sys.stderr, flush=True)


def _load_module(path: Path, name: str | None = None) -> Any:
    name = name or f"bench_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _quiet_trl() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from trl.experimental.openreward import OpenRewardSpec
    logging.getLogger("trl.experimental.openreward").setLevel(logging.ERROR)
    return OpenRewardSpec


def _helpdesk_specs() -> list[dict[str, Any]]:
    data = json.loads(HELPDESK_SNAPSHOT.read_text(encoding="utf-8"))
    return [task["spec"] for task in data["tasks"]["train"]["tasks"]]
