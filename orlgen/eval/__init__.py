"""`orlgen eval`: score a model on an environment through its generated module, before training.

Each rollout is a generated adapter, played the way TRL's `GRPOTrainer` plays it: `reset(**row)`
with a row of the module's `build_dataset`, the model's turns, its tool calls sent to the adapter's
tool methods, the module's `reward_funcs` (the terminal-tool step), then `get_reward()`. Sessions,
faults, timeouts and reward rules are therefore the runtime's, exactly as in training.

Modules, one job each: `subject` (what is evaluated: a module or a snapshot), `policy` (an
OpenAI-compatible endpoint) and `hf` (a local checkpoint through TRL's own template and parser),
`rollout` (one episode), `run` (many, concurrently, with progress and Ctrl-C), `stats` (pass@k and
friends), `report` (the table, JSON), `records` (the JSONL trajectories), `html` (a run directory's
`report.html`), `upload` (`--upload`: the rollouts posted to OpenReward's rollout API).

This package imports the runtime and, lazily, transformers and trl; the runtime never imports it.

`__all__` names its public modules, the ones other packages import (a test holds every import
from outside to them); the others are this package's own.
"""

__all__ = ["command"]
