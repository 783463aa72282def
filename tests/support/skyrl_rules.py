"""Plays scripted skyrl-gym episodes of several generated `_skyrl` modules in one process of the
skyrl venv (a process start is seconds of imports), each as `tests/support/skyrl_episode.py`
plays one (`build_dataset` rows through parquet, `skyrl_gym.make`, `init`, `step` per turn,
`get_metrics`, `close`), and prints `{module: [episode, ...]}` as one JSON line.

The job comes on stdin: `{"paths": [directories to import the modules from], "env_config",
"modules": {module: [{"split", "index", "turns"}, ...]}}`.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
from pathlib import Path

from tests.support.skyrl_episode import play


def main() -> None:
    job = json.loads(sys.stdin.read())
    sys.path[:0] = job["paths"]
    played = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, episodes in job["modules"].items():
            module = importlib.import_module(name)
            module.register()
            played[name] = [play(module, job["env_config"], episode, Path(scratch)) for episode in episodes]
    print(json.dumps(played))


if __name__ == "__main__":
    main()
