"""`make demo`: the whole orlgen loop on the bundled echo environment, offline.

1. serve `examples.echo:Echo` on a loopback port (a real ORS server in a child process);
2. `orlgen snapshot <its URL> --out build/demo` (capture, snapshot, generate);
3. import the generated module and play one scripted rollout through its adapter:
   the tools the model would see, the prompt, the tool call, the reward.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OPENREWARD_LOG_LEVEL", "WARNING")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from orlgen.serve import ServerProcess  # noqa: E402

OUT = REPO / "build" / "demo"


def main() -> None:
    with ServerProcess("examples.echo:Echo") as server:
        print(f"1. echo environment served at {server.url}")
        command = [sys.executable, "-m", "orlgen", "snapshot", server.url, "--out", str(OUT)]
        print(f"2. $ orlgen snapshot {server.url} --out {OUT.relative_to(REPO)}")
        subprocess.run(command, check=True, cwd=REPO)
        module = _load(OUT / "echo.py")
        play_one_rollout(module)


def play_one_rollout(module) -> None:
    from transformers.utils import get_json_schema

    env = module.EchoEnv()  # zero arguments: the snapshot knows the target
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
    main()
