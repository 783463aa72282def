"""Run `vf-eval` on a generated verifiers module, offline, and read what it wrote.

The model is `tests/support/stub_openai.py` (a scripted OpenAI-compatible endpoint on loopback);
the ORS server is whatever `env_url` names (the caller starts it, in the main venv). `vf-eval`
runs in the cached verifiers venv (`tests/support/framework_venvs.py`) with the flags that keep it
on this machine (TRAINERS.md §3.4: the subprocess runtime, the null harness, `--no-push`) and a
scratch HOME (it writes `~/.cache/verifiers`). The uv cache is kept across runs: the harness's
chat program is prepared with `uv sync --script` on every run, quick once cached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.framework_venvs import CACHE, verifiers_bin
from tests.support.modules import REPO

STUB = REPO / "tests" / "support" / "stub_openai.py"


@dataclass
class Evaluated:
    traces: list[dict]  # traces.jsonl's traces, one per rollout
    requests: list[dict]  # every request body the endpoint received
    wall: float  # seconds vf-eval ran
    stderr: str
    stdout: str  # with --no-rich, every trace as JSON


class Stub:
    """The scripted endpoint in a child process playing `script` (see the stub); `.url` ends in `/v1`."""

    def __init__(self, work: Path, script: str = "win") -> None:
        self.log = work / "stub.jsonl"
        port = work / "stub.port"
        self.process = subprocess.Popen(
            [sys.executable, str(STUB), "--port-file", str(port), "--log", str(self.log)],
            stdout=subprocess.DEVNULL,
            env={**os.environ, "STUB_SCRIPT": script},
        )
        deadline = time.monotonic() + 30
        while not port.exists() or not port.read_text():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("the stub endpoint did not start")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port.read_text()}/v1"

    def requests(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)

    def __enter__(self) -> Stub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def vf_eval(
    module: str,
    path: Path,
    work: Path,
    env: dict[str, str],
    *,
    tasks: int = 1,
    rollouts: int = 1,
    script: str = "win",
    concurrency: int = 8,
    args: tuple[str, ...] = (),
) -> Evaluated:
    """`vf-eval module` on the train split with `path` (holding the module) first on PYTHONPATH,
    `env` added to its environment (the module's `ORLGEN_<NAME>_URL`), `tasks` × `rollouts`
    rollouts, `concurrency` at once, the stub playing `script`, `args` added to the command."""
    bin_dir = verifiers_bin()
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    with Stub(work, script) as stub:
        command = [
            str(bin_dir / "vf-eval"), module, "-m", "stub",
            "--client.base-url", stub.url, "--client.api-key-var", "STUB_API_KEY",
            "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
            "--env.agent.max-turns", "40", "--env.taskset.split", "train", "-c", str(concurrency),
            "--no-push", "--no-rich", "-n", str(tasks), "-r", str(rollouts), "-o", str(out), *args,
        ]  # fmt: skip
        child_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ORLGEN_", "PYTHON", "VIRTUAL_ENV"))},
            "PATH": f"{bin_dir}:{os.environ['PATH']}",  # vf-eval and uv
            "HOME": str(work / "home"),
            "UV_CACHE_DIR": str(CACHE / "uv-cache"),
            "PYTHONPATH": f"{path}:{REPO}",
            "STUB_API_KEY": "unused",
            **env,
        }
        started = time.monotonic()
        run = subprocess.run(command, env=child_env, capture_output=True, text=True, timeout=900, cwd=work)
        wall = time.monotonic() - started
        assert run.returncode == 0, run.stderr[-4000:]
        (found,) = out.glob("*/traces.jsonl")
        traces = [trace for line in found.read_text().splitlines() for trace in json.loads(line)["traces"]]
        return Evaluated(traces, stub.requests(), wall, run.stderr, run.stdout)
