"""`make demo`: the whole orlgen loop on the bundled echo environment, offline.

1. `orlgen snapshot examples.echo:Echo --out build/demo`: serve the class on a loopback port for
   the capture, write its snapshot and generate its module;
2. import the generated module and play one scripted rollout through its adapter, built with no
   arguments: it serves `examples.echo:Echo` itself, on another loopback port, for as long as this
   process runs. The tools the model would see, the prompt, the tool call, the reward.

`build/demo` is the demo's own scratch directory, emptied at the start, so the demo runs the same
any number of times in a row, and after an interrupted run. `python examples/demo.py DIR` writes
to DIR instead.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TARGET = "examples.echo:Echo"


def main(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    shown = out.relative_to(REPO) if out.is_relative_to(REPO) else out
    print(f"1. $ orlgen snapshot {TARGET} --out {shown}")
    command = [sys.executable, "-m", "orlgen", "snapshot", TARGET, "--out", str(out)]
    subprocess.run(command, check=True, cwd=REPO)
    play_one_rollout(_load(out / "echo.py"))


def play_one_rollout(module) -> None:
    from transformers.utils import get_json_schema

    env = module.EchoEnv()  # zero arguments: a module:Class target is served by this process
    print(f"2. EchoEnv() serves {module.TARGET.value} at {env._episode.connection.url}")
    print("3. tools the model sees (transformers.utils.get_json_schema on the generated methods):")
    for name in module.TOOLS:
        schema = get_json_schema(getattr(env, name))["function"]
        print(f"   - {schema['name']}{json.dumps(schema['parameters'].get('properties', {}))}")
    row = module.build_dataset(num_tasks=1)[0]
    print(f"4. reset(task_index={row['task_index']}) → prompt: {env.reset(**row)!r}")
    print(f"5. scripted policy calls echo(text={row['target']!r}) → {env.echo(text=row['target'])!r}")
    print(f"6. reward={env.reward} finished={env.finished} outcome={env.outcome}")
    print(f"   get_reward() → {env.get_reward()} (TRL logs it as the {type(env).__name__} reward column)")


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else REPO / "build" / "demo")
