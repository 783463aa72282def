"""Plays scripted skyrl-gym episodes of a generated `_skyrl` module as SkyRL's generator does, in
the skyrl venv (`tests/support/framework_venvs.py`), and prints what happened as one JSON line.

Per episode: the module's rows written with `build_dataset(...).to_parquet` and read back with
`datasets.load_dataset("parquet")` (as SkyRL's `PromptDataset` reads them), `prompt` and
`env_class` popped and the rest handed over as extras with `max_turns`, `skyrl_gym.make(env_class,
env_config=..., extras=...)`, `init(prompt)`, `step(text)` per scripted turn until done,
`get_metrics()`, and `close()` twice (skyrl_gym asks it be idempotent). The job comes on stdin:
`{"module", "env_config", "episodes": [{"split", "index", "turns", "max_turns"}]}`, and `path`, a
directory to import the module from (a module rendered for a test env), if any.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile
from pathlib import Path

import datasets
import skyrl_gym


def _row(module, split: str, index: int, scratch: Path) -> dict:
    path = scratch / f"{split}-{index}.parquet"
    module.build_dataset(split, indices=[index]).to_parquet(str(path))
    return dict(datasets.load_dataset("parquet", data_files=str(path))["train"][0])


def play(module, env_config: dict, episode: dict, scratch: Path) -> dict:
    row = _row(module, episode["split"], episode["index"], scratch)
    prompt, env_class = row.pop("prompt"), row.pop("env_class")
    extras = {**row, "max_turns": episode.get("max_turns", 10)}
    env = skyrl_gym.make(env_class, env_config=env_config, extras=extras)
    chat, _ = env.init(prompt)
    steps = []
    for text in episode["turns"]:
        steps.append(env.step(text))
        if steps[-1]["done"]:
            break
    metrics = env.get_metrics()
    env.close()
    env.close()
    return {"env_class": env_class, "extras": sorted(extras), "chat": chat, "steps": steps, "metrics": metrics}


def main() -> None:
    job = json.loads(sys.stdin.read())
    if job.get("path"):
        sys.path.insert(0, job["path"])
    module = importlib.import_module(job["module"])
    module.register()
    module.register()  # once per process, however often it is called
    with tempfile.TemporaryDirectory() as scratch:
        episodes = [play(module, job["env_config"], episode, Path(scratch)) for episode in job["episodes"]]
    loaded = sorted(name for name in sys.modules if name.split(".")[0] in ("openreward", "trl", "transformers"))
    print(json.dumps({"episodes": episodes, "loaded": loaded, "system_prompt": module.SYSTEM_PROMPT}))


if __name__ == "__main__":
    main()
