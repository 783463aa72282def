"""The generator's packages form one line, and no import runs back up it.

docs/design.md's module table gives the line: the shared base, then `schema/`, `snapshot/`,
`capture/`, `plan/`, `trainers/`, `render/`, `review/`, and the commands. Every import a module
makes (at top level or inside a function) is read from its source, so a lazy import that runs
upward fails too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent.parent / "orlgen"
LINE = ("base", "schema", "snapshot", "capture", "plan", "trainers", "render", "review", "commands")
BASE = {"__init__", "errors", "names", "lookalike", "disk", "machine_key"}
OFFLINE = {"plan", "trainers", "render", "review"}  # stages that run with no server, so never import capture


def _layer(module: str) -> str | None:
    """The layer of a dotted `orlgen...` module; None for the runtime, which is no stage."""
    parts = module.split(".")[1:]
    if not parts:
        return "base"
    if parts[0] == "runtime":
        return None
    if parts[0] in LINE:
        return parts[0]
    return "base" if parts[0] in BASE else "commands"


def _imports(text: str, package: str) -> set[str]:
    """Every `orlgen` module or name that `text`, a module of `package`, imports."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found |= {f"{module}.{alias.name}" for alias in node.names} | {module}
    return {name for name in found if name == "orlgen" or name.startswith("orlgen.")}


def _upward(text: str, module: str) -> list[str]:
    """The imports of `text` (the source of `module`, in package `module`'s parent) that run back
    up the line."""
    own = _layer(module)
    assert own is not None
    found = []
    for imported in sorted(_imports(text, module.rpartition(".")[0])):
        layer = _layer(imported)
        if layer is None or not _exists(imported):
            continue
        if LINE.index(layer) > LINE.index(own) or (own in OFFLINE and layer == "capture"):
            found.append(f"{imported} ({layer})")
    return found


def _exists(module: str) -> bool:
    """Whether a dotted name is a module or package of orlgen (`from x import name` also yields
    `x.name`, which is often a class, not a module)."""
    relative = Path(*module.split(".")[1:])
    return module == "orlgen" or (SOURCE / relative).with_suffix(".py").is_file() or (SOURCE / relative).is_dir()


def _module_name(path: Path) -> str:
    """The dotted name of the code in `path`; a package's `__init__` keeps its last part, so that
    the package it sits in is the package itself."""
    return ".".join(("orlgen", *path.relative_to(SOURCE).with_suffix("").parts))


GENERATOR = sorted(p for p in SOURCE.rglob("*.py") if "runtime" not in p.relative_to(SOURCE).parts)


@pytest.mark.parametrize("path", GENERATOR, ids=lambda p: p.relative_to(SOURCE).as_posix())
def test_a_stage_imports_only_the_stages_before_it(path: Path):
    assert _upward(path.read_text(encoding="utf-8"), _module_name(path)) == []


@pytest.mark.parametrize(
    ("module", "source", "caught"),
    [
        ("orlgen.snapshot.model", "from orlgen.plan.planner import plan\n", ["orlgen.plan.planner (plan)"]),
        (
            "orlgen.plan.planner",
            "def f():\n    from ..capture import live\n",
            ["orlgen.capture (capture)", "orlgen.capture.live (capture)"],
        ),
        ("orlgen.render.jobs", "from orlgen.review.files import write_files\n", ["orlgen.review.files (review)"]),
        ("orlgen.plan.planner", "from orlgen.trainers import trainer\n", ["orlgen.trainers (trainers)"]),
        ("orlgen.review.check", "from orlgen.render.jobs import jobs\n", []),
    ],
)
def test_the_check_catches_an_upward_import(module: str, source: str, caught: list[str]):
    """The check itself can fail: lazy and relative imports are read too."""
    assert _upward(source, module) == caught


def test_the_runtime_imports_no_part_of_the_generator():
    found = {
        f"{path.relative_to(SOURCE)}: {name}"
        for path in sorted((SOURCE / "runtime").rglob("*.py"))
        for name in _imports(path.read_text(encoding="utf-8"), _module_name(path).rpartition(".")[0])
        if _exists(name) and not (name == "orlgen" or name.startswith("orlgen.runtime"))
    }
    assert found == set()


def test_importing_eval_imports_no_renderer():
    """`orlgen eval` writes files and seals runs through the shared base (`disk`, `machine_key`),
    not through `review`, whose `files` imported the render stack (about half of eval's import
    time): a fresh interpreter imports the command and lists what came with it."""
    names = ("orlgen.render", "orlgen.review", "orlgen.capture", "orlgen.plan.planner", "jinja2", "black")
    probe = f"import sys, orlgen.eval.command; print(sorted(m for m in sys.modules if m.startswith({names!r})))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


RUNTIME = SOURCE / "runtime"


def _runtime_modules() -> dict[str, Path]:
    """Every runtime module by its dotted name under `orlgen.runtime` (`episode`, `session.budget`;
    a package's `__init__` is the package itself, the runtime's own is `__init__`)."""
    modules = {}
    for path in RUNTIME.rglob("*.py"):
        parts = path.relative_to(RUNTIME).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)
        modules[name] = path
    return modules


def _runtime_graph() -> dict[str, set[str]]:
    """Each runtime module's imports of other runtime modules, lazy ones included."""
    modules = _runtime_modules()
    graph = {}
    for name, path in modules.items():
        inside = name if path.name == "__init__.py" and name != "__init__" else name.rpartition(".")[0]
        package = ".".join(part for part in ("orlgen.runtime", inside) if part)
        found = set()
        for imported in _imports(path.read_text(encoding="utf-8"), package):
            parts = imported.split(".")[2:]
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts and ".".join(parts) != name:
                found.add(".".join(parts))
        graph[name] = found
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One path per import cycle found by a depth-first walk (empty: the graph runs one way)."""
    state: dict[str, str] = {}
    found: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                found.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                walk(imported, [*path, imported])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    return found


def test_the_runtime_has_no_import_cycle():
    assert _cycles(_runtime_graph()) == []


def test_the_cycle_check_can_fail():
    graph = {"connection": {"local"}, "local": {"redaction", "connection"}, "redaction": set()}
    assert _cycles(graph) == [["connection", "local", "connection"]]


TRL_SHIM = {"trl", "trl.adapter", "trl.scoring", "trl.group", "trl.mixture", "trl.tools", "trl.rollout"}


def _closure(graph: dict[str, set[str]], module: str) -> set[str]:
    """Every runtime module `module` imports, directly or through another, lazy imports included."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for imported in graph[todo.pop()] - seen:
            seen.add(imported)
            todo.append(imported)
    return seen


@pytest.mark.parametrize("core", ["episode", "skyrl", "verifiers"])
def test_the_episode_core_and_the_other_shims_import_nothing_of_trls(core: str):
    """`Episode` is the trainer-neutral core: it, and the skyrl and verifiers shims that sit on it,
    reach none of TRL's shim (the adapter, its reward functions, its mixtures) by any import."""
    assert _closure(_runtime_graph(), core) & TRL_SHIM == set()


def test_the_closure_check_can_fail():
    graph = {"episode": {"content"}, "content": {"adapter"}, "adapter": set()}
    assert _closure(graph, "episode") == {"content", "adapter"}


# The runtime's layers, bottom up: a module imports only its own layer and those below. The trainer
# shims sit on top, side by side, and none imports another; `__init__` (the public surface) is
# above them all.
RUNTIME_LAYERS = (
    (
        "base",
        {
            "errors",
            "process",
            "redaction",
            "types",
            "unset",
            "fingerprint",
            "contract",
            "siblings",
            "log",
            "child_secrets",
        },
    ),
    ("data", {"data"}),
    ("ors", {"ors"}),
    ("session", {"session"}),
    ("core", {"episode", "content", "offers", "coverage", "hermes", "surface", "offload"}),
    ("shims", {"trl", "verifiers", "skyrl", "agent", "verl"}),
)
SHIMS = dict(RUNTIME_LAYERS)["shims"]


def _runtime_layer(module: str) -> int:
    head = module.split(".")[0]
    for rank, (_, members) in enumerate(RUNTIME_LAYERS):
        if head in members:
            return rank
    raise AssertionError(f"runtime module {module} is in no layer: add it to RUNTIME_LAYERS")


def _against_the_layers(graph: dict[str, set[str]]) -> list[str]:
    """Each import that runs up the runtime's layers, or from one trainer's shim into another's."""
    found = []
    for module, imported in sorted(graph.items()):
        if module == "__init__":
            continue
        for other in sorted(imported):
            up = _runtime_layer(other) > _runtime_layer(module)
            across = module.split(".")[0] in SHIMS and other.split(".")[0] in SHIMS - {module.split(".")[0]}
            if up or across:
                found.append(f"{module} -> {other}")
    return found


def test_the_runtimes_layers_import_one_way():
    assert _against_the_layers(_runtime_graph()) == []


def test_the_layer_check_can_fail():
    graph = {"ors.client": {"session.backoff"}, "skyrl": {"trl.tools", "episode"}, "episode": set()}
    assert _against_the_layers(graph) == ["ors.client -> session.backoff", "skyrl -> trl.tools"]


def test_generated_modules_import_only_the_runtimes_public_surfaces():
    """A generated module names only what the runtime promises to keep: the names `orlgen.runtime`
    exports, `require_contract`, `siblings`, and the public names of the verifiers, skyrl, agent
    and verl shims."""
    import importlib

    public = {"orlgen.runtime": set(importlib.import_module("orlgen.runtime").__all__)}
    public |= {"orlgen.runtime.contract": {"require_contract"}, "orlgen.runtime.siblings": {"siblings"}}
    public["orlgen.runtime"] |= {"skyrl", "agent", "verl"}  # shims imported as modules
    shims = (("verifiers", "verifiers.py"), ("skyrl", "skyrl.py"), ("agent", "agent/__init__.py"), ("verl", "verl.py"))
    for shim, source in shims:
        text = (RUNTIME / source).read_text(encoding="utf-8")
        names = next(
            ast.literal_eval(node.value)
            for node in ast.parse(text).body
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__"
        )
        public[f"orlgen.runtime.{shim}"] = set(names)
    found = []
    for path in sorted((SOURCE.parent / "generated").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orlgen"):
                found += [
                    f"{path.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name not in public.get(node.module, set())
                ]
            elif isinstance(node, ast.Import):
                found += [f"{path.name}: {alias.name}" for alias in node.names if alias.name.startswith("orlgen")]
    assert found == []
