"""Shared pieces of the benchmark: the environment children inherit, servers and their request
counts, child processes, statistics, progress lines and results files."""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
ORLGEN_CLI = str(Path(PY).with_name("orlgen"))
HELPDESK_MODULE = REPO / "generated" / "helpdesk.py"
HELPDESK_SNAPSHOT = REPO / "generated" / "helpdesk.snapshot.json"

# Every child (servers, workers, CLI runs) inherits these: no update check against PyPI (it
# would run a network thread in whichever process imports `openreward`), no experimental
# warning from TRL, quiet servers.
QUIET_ENV = {
    "OPENREWARD_DISABLE_UPDATE_CHECK": "1",
    "OPENREWARD_LOG_LEVEL": "WARNING",
    "TRL_EXPERIMENTAL_SILENCE": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def child_env(**extra: str) -> dict[str, str]:
    """A child's environment: this process's, quiet, with the repository importable."""
    return {**os.environ, **QUIET_ENV, "PYTHONPATH": _pythonpath(), **extra}


def _pythonpath() -> str:
    """The repository first (children import `bench`, `examples`, `generated`), then PYTHONPATH."""
    return os.pathsep.join([str(REPO), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]])


@contextlib.contextmanager
def environ(**values: str) -> Iterator[None]:
    """`os.environ` with `values` set inside the block and as it was after it."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def child_environ(**extra: str) -> contextlib.AbstractContextManager[None]:
    """`os.environ` as `child_env(**extra)` makes it, inside the block: `ServerProcess` hands
    `os.environ` to the child it starts."""
    return environ(**QUIET_ENV, PYTHONPATH=_pythonpath(), **extra)


def log(message: str) -> None:
    """A progress line, on stderr (the table goes to stdout)."""
    print(f"  · {message}", file=sys.stderr, flush=True)


# ── servers ─────────────────────────────────────────────────────────────────────────────


@dataclass
class Served:
    """One `ServerProcess` serving a bench environment (`bench.served:Helpdesk`: TCP_NODELAY;
    `bench.stalled:Helpdesk`: as `orlgen.serve` serves today)."""

    spec: str
    process: Any = None

    @property
    def url(self) -> str:
        return self.process.url

    def requests(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/__bench__/requests", timeout=30) as response:
            return json.loads(response.read())

    def reset_requests(self) -> None:
        request = urllib.request.Request(f"{self.url}/__bench__/reset", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()

    @contextlib.contextmanager
    def counting(self) -> Iterator[dict[str, Any]]:
        """Counts of the requests made inside the block (filled in on exit)."""
        found: dict[str, Any] = {}
        self.reset_requests()
        yield found
        found.update(self.requests())


@contextlib.contextmanager
def servers(*served: Served) -> Iterator[tuple[Served, ...]]:
    """Start the servers in parallel (child Python processes of this process group), stop them on exit."""
    from orlgen.serve import ServerProcess

    errors: list[BaseException] = []

    def start(item: Served) -> None:
        try:
            item.process = ServerProcess(item.spec, startup_timeout=120).start()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(item,)) for item in served]
    with child_environ():  # ServerProcess hands os.environ to its child
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
            yield served
        finally:
            for item in served:
                if item.process is not None:
                    item.process.stop()


# ── child processes ─────────────────────────────────────────────────────────────────────


@dataclass
class ChildRun:
    seconds: float  # wall time, spawn to exit
    returncode: int
    stdout: str
    stderr: str
    max_rss_mb: float  # the child's own peak RSS (os.wait4), not its children's
    cpu_seconds: float = 0.0  # the child's user + system CPU time

    def json(self) -> Any:
        """The last stdout line, as JSON (the workers' answer)."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        if self.returncode != 0 or not lines:
            raise RuntimeError(f"child failed (exit {self.returncode}): {self.stderr.strip()[-2000:]}")
        return json.loads(lines[-1])


def run_child(
    args: Sequence[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
) -> ChildRun:
    """Run a child to completion; peak memory from its own rusage (os.wait4 on its pid)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or child_env(),
        cwd=str(cwd or REPO),
    )
    out: dict[str, str] = {}

    def drain(name: str, stream: Any) -> None:
        out[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=(n, s)) for n, s in (("out", process.stdout), ("err", process.stderr))
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            process.kill()
        time.sleep(0.002)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    return ChildRun(
        seconds,
        process.returncode,
        out.get("out", ""),
        out.get("err", ""),
        usage.ru_maxrss / 1024,
        usage.ru_utime + usage.ru_stime,
    )


class LineChild:
    """A child process spoken to in lines: a command on stdin, an answer on stdout. With
    `answer_prefix`, only lines starting with it are answers (a library may print to stdout
    too: verl's BaseTool prints each tool's schema), returned without it."""

    def __init__(self, args: Sequence[str], env: dict[str, str], cwd: Path = REPO, answer_prefix: str = "") -> None:
        self.args = list(args)
        self.prefix = answer_prefix
        self.process = subprocess.Popen(
            self.args, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def read(self) -> str:
        assert self.process.stdout is not None
        while line := self.process.stdout.readline():
            if line.startswith(self.prefix):
                return line.removeprefix(self.prefix).strip()
        raise RuntimeError(f"child {self.args[:5]} ended (exit {self.process.wait()}); see stderr above")

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self, timeout: float = 60) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# ── statistics ──────────────────────────────────────────────────────────────────────────


def pair_order(i: int) -> tuple[str, str]:
    """The sides of the `i`-th pair, in the order they run: it flips every pair."""
    return ("orlgen", "trl") if i % 2 == 0 else ("trl", "orlgen")


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Paired:
    """orlgen and TRL samples of one metric, taken in alternating pairs."""

    orlgen: list[float] = field(default_factory=list)
    trl: list[float] = field(default_factory=list)

    def add(self, orlgen: float, trl: float) -> None:
        self.orlgen.append(orlgen)
        self.trl.append(trl)

    def summary(self) -> dict[str, Any]:
        o, t = median(self.orlgen), median(self.trl)
        pair_ratios = [a / b for a, b in zip(self.orlgen, self.trl, strict=False) if b]
        return {
            "orlgen_median": o,
            "trl_median": t,
            "ratio_of_medians": o / t if t else None,
            "median_pair_ratio": median(pair_ratios) if pair_ratios else None,
            "orlgen": self.orlgen,
            "trl": self.trl,
            "pairs": len(pair_ratios),
        }


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": sys.version.split()[0]}
    for name in (
        "orlgen",
        "trl",
        "openreward",
        "datasets",
        "transformers",
        "pydantic",
        "datamodel-code-generator",
        "black",
    ):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "-"
    return found


def run_record(elapsed: float, load_at_start: tuple[float, float, float]) -> dict[str, Any]:
    """What every results file opens with: when, how long, and on what machine under what load."""
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "elapsed_s": elapsed,
        "machine": {"cpus": os.cpu_count(), "loadavg_at_start": load_at_start, "loadavg_at_end": os.getloadavg()},
    }


def write_json(path: Path, data: Any, **options: Any) -> None:
    """A results file: `data` as indented JSON (`options` go to `json.dumps`)."""
    path.write_text(json.dumps(data, indent=2, **options) + "\n", encoding="utf-8")
