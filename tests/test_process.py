"""The runtime's per-process state (`orlgen.runtime.process`): a forked child starts fresh and
leaves its parent's sessions, servers and connections alone; and no registry escapes the mechanism."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.modules import REPO

RUNTIME = REPO / "orlgen" / "runtime"


def run_across_fork(url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORLGEN_")}
    process = subprocess.run(
        [sys.executable, "-m", "tests.support.fork_rollout", url],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    return json.loads(process.stdout.splitlines()[-1])


# This venv has no Ray: the cluster budget's heartbeat list stays empty (tests/test_ray_budget.py
# plays it on a cluster, where Ray's workers are spawned, not forked).
NO_RAY = {"session.cluster._beating", "session.cluster._by_env"}


def check_across_fork(report: dict, not_reached: set[str]) -> None:
    holds_nothing = {name for name, filled in report["populated"].items() if filled is None}
    assert holds_nothing == {n for n in report["populated"] if n.endswith("lock") or n == "session.backoff._random"}
    empty = {name for name, filled in report["populated"].items() if filled is False}
    assert empty == not_reached, "the parent's rollouts left these states empty: the fork test would not test them"
    assert report["unnamed"] == [] and report["stale"] == [], report
    assert report["child_exit"] == 0
    assert report["rollout"] == [1.0, "finished"]
    assert report["inherited_adapter"] == [1.0, "finished"]
    assert report["after_bare_child"] == [1.0, "finished"]
    assert report["after"] == {"held": [1.0, "finished"], "new": [1.0, "finished"]}


@pytest.mark.slow
def test_forked_child_starts_fresh_and_leaves_the_parent_working(serve, ors_kind):
    """With every per-process state filled by real rollouts and every lock held by another thread
    at the fork: the child finds each state fresh, plays a rollout with a new adapter and one with
    an inherited adapter, and exits normally; then the parent finishes the session it kept open
    across the fork and plays again (the child deleted none of its sessions, closed none of its
    connections)."""
    report = run_across_fork(serve("examples.echo:Echo"))
    # ors-sdk's server has no `/version`: no deployment to refuse there
    unpinned = {"episode._deployment_refused"} if ors_kind == "ors-sdk" else set()
    check_across_fork(report, not_reached={"session.local._servers", "session.local._exit_hooks", *unpinned, *NO_RAY})


@pytest.mark.slow
def test_forked_child_leaves_the_parents_local_server_running():
    """No URL: the adapters serve the class themselves. The child starts its own server; the
    parent's keeps serving it after the child's exit (the child's atexit hooks do not touch it)."""
    check_across_fork(run_across_fork(""), not_reached=NO_RAY)


FINALIZED = """
import os, sys
from orlgen.runtime import process

class Parent:
    def __del__(self):
        os.write(1, b"finalized in the child" if process.forked() else b"")

state = process.per_process([Parent()])
if os.fork() == 0:
    sys.exit(0)  # a normal exit: atexit hooks, then the interpreter's teardown
os.wait()
"""


def test_what_a_child_forgets_is_not_finalized_even_at_its_exit():
    """The child forgets the parent's objects without finalizing them, through its interpreter's
    teardown too: a finalized aiohttp connector of the parent's would unregister the parent's
    pooled sockets from the epoll instance they share."""
    process = subprocess.run([sys.executable, "-c", FINALIZED], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert process.returncode == 0, process.stderr
    assert process.stdout == ""


# -- no module-level registry outside the mechanism --------------------------------------------

# Module-level names that hold mutable values and are not per-process state, each for a reason.
NOT_PER_PROCESS = {
    "process._declared": "the mechanism's own list of declarations",
    "process._inherited": "what a fork's child forgot; it must outlive every reset",
    "session.budget._class_max": "configuration (set_max_sessions): a child keeps its parent's",
    "session.connection._exit_hooks": "hooks registered at import: a child runs them on its own state",
    "session.connection._sigterm_checked": "guards the SIGTERM handler, which a fork's child inherits",
    "contract.SUPPORTED": "a constant table (each trainer's contract range)",
    "contract.CONTRACTS": "a constant table (derived from SUPPORTED)",
    "ors.provenance.FIELDS": "a constant table",
    "ors.secrets._KNOWN": "a constant table",
    "ors.secrets.WELL_KNOWN_SECRETS": "a constant table",
    "data.tasks_file._KEYS": "a constant list",
    "data.reward.REDUCTIONS": "a constant tuple (the reward rule's reductions)",
    "data.reward.ALIASES": "a constant table (the rule's names before 0.3)",
    "data.reward._WORDS": "a constant table",
    "data.reward._REDUCE": "a constant table of functions",
    "trl.scoring._EXTRAS": "a constant table of the log_extra columns",
}
# Calls that make immutable or stateless values (or the declarations themselves).
IMMUTABLE_CALLS = {
    "process.per_process",
    "process.lock",
    "per_process",
    "lock",
    "re.compile",
    "frozenset",
    "range",
    "float",
    "os.getpid",
    "TypeVar",
    "logging.getLogger",
    "json.JSONEncoder",
    "_Unset",
}
MUTABLE_LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


def module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at module scope (into `if`/`try`/`with` blocks, not into defs)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(statement, block, []):
                    yield from module_statements(inner.body if isinstance(inner, ast.ExceptHandler) else [inner])


def mutable_globals(path: Path) -> set[str]:
    """`module.name` of every module-level name bound to a mutable literal or a call outside
    IMMUTABLE_CALLS, and of every name a function rebinds with `global`."""
    tree = ast.parse(path.read_text())
    found = set()
    for statement in module_statements(tree.body):
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        call = isinstance(value, ast.Call) and ast.unparse(value.func) not in IMMUTABLE_CALLS
        if (call or isinstance(value, MUTABLE_LITERALS)) and targets[0].__class__ is ast.Name:
            found.update(target.id for target in targets if isinstance(target, ast.Name) and target.id != "__all__")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.update(node.names)
    module = ".".join(path.relative_to(RUNTIME).with_suffix("").parts) if path.is_relative_to(RUNTIME) else path.stem
    return {f"{module}.{name}" for name in found}


def test_every_runtime_registry_is_declared_per_process():
    """A module-level dict, list, set, lock, weak collection or object of the runtime is declared
    through `orlgen.runtime.process` (or listed above with its reason): a forked child resets it."""
    found = set().union(*(mutable_globals(path) for path in sorted(RUNTIME.rglob("*.py"))))
    assert found - NOT_PER_PROCESS.keys() == set(), "declare these with process.per_process or process.lock"
    assert NOT_PER_PROCESS.keys() - found == set(), "stale entries in NOT_PER_PROCESS"


def test_the_scan_sees_what_it_must(tmp_path):
    """The scan flags a plain registry, a lock, a weak collection and a `global` rebinding, and
    lets declarations and constants through."""
    module = tmp_path / "sample.py"
    module.write_text(
        "import re, threading, weakref\n"
        "from . import process\n"
        "_a: dict[str, int] = {}\n"
        "_b = threading.Lock()\n"
        "if True:\n"
        "    _c = weakref.WeakSet()\n"
        "_d = process.per_process({})\n"
        "_e = process.lock()\n"
        "_F = re.compile('x')\n"
        "_G = (1, 2)\n"
        "_h = False\n"
        "def f():\n"
        "    global _h\n"
        "    _h = True\n"
    )
    assert mutable_globals(module) == {"sample._a", "sample._b", "sample._c", "sample._h"}
