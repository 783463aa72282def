"""Trainers side by side: what each trainer's module shows the model, what a tool call costs
through it, and how long an evaluation takes. One table of rows (`Row`).

`python -m bench.trainers [--json PATH]` measures the example envs (surface) and the both-env
(calls and walls: `timing_rows`).

- Surface, per example env (bench/fidelity's method and sets): every fact of each tool's schema
  and description (`tool_facts`) is classified as shown structurally, as text, or lost in what the
  model is shown (`classify`), and the shown tools' JSON is counted in characters (`prompt_chars`:
  each function dumped as the chat template's `tojson` does). What each trainer's model is shown:
  - trl: the TRL module's methods, through `get_json_schema` (bench/fidelity's `orlgen_view`);
  - verifiers: what the module's MCP server lists (`tests/support/verifiers_schemas.py`, run in
    the verifiers venv), `$ref`s resolved, since the classifier reads inline schemas;
  - skyrl: the module's `SYSTEM_PROMPT` (rendered in memory and read from its source: skyrl_gym
    is not installed here), one JSON line per tool; also the whole system turn;
  - skyrl-own: SkyRL's own OpenReward adapter (NovaSky-AI/SkyRL
    `examples/train_integrations/openreward`), the characters of the lines its `prepare_tasks.py`
    writes per tool (`{"name", "arguments_schema": <the raw input schema>, "description": <the
    raw docstring>}`, `json.dumps` defaults), computed from the snapshot: that code is not run here.
- Per call and per run, on the both-env (openreward SDK server on loopback, scripted endpoint):
  the raw SDK `session.call_tool`, the TRL module's method, the verifiers module under `vf-eval`,
  and `OrsTextEnv.step()` with one `<tool_call>` of the same tool (in the skyrl venv); the wall of
  16 winning rollouts under `vf-eval` and under `orlgen eval`. The framework venvs are
  `tests/support/framework_venvs.py`'s.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import ORLGEN_CLI, REPO, median, write_json
from bench.fidelity.classify import classify
from bench.fidelity.facts import tool_facts
from bench.fidelity.sets import Group, example_groups
from bench.fidelity.views import View, orlgen_view, prompt_chars

SCHEMAS = REPO / "tests" / "support" / "verifiers_schemas.py"


@dataclass(frozen=True)
class Row:
    trainer: str  # "trl", "verifiers", "skyrl", "skyrl-own" (SkyRL's hand-written adapter), "raw"
    env: str
    measure: str  # "surface chars", "facts shown", "facts lost", ...
    value: float
    note: str = ""


def render_verifiers(snapshot_path: Path, out: Path) -> str:
    """The verifiers module of a snapshot, written to `out` beside copies of the snapshot's files;
    its module name."""
    from orlgen.render.jobs import render_module
    from orlgen.runtime.data.dataset import tasks_path
    from orlgen.snapshot.model import load

    snapshot = load(snapshot_path)
    for path in (snapshot_path, tasks_path(snapshot_path)):
        if path.exists() and path.parent.resolve() != out.resolve():
            shutil.copy2(path, out / path.name)
    name = f"{snapshot.name}_verifiers"
    (out / f"{name}.py").write_text(render_module(snapshot, None, "verifiers"), encoding="utf-8")
    return name


def advertised(out: Path, modules: list[str]) -> dict[str, list[dict[str, Any]]]:
    """module → the tools its MCP server lists, from one child in the verifiers venv."""
    from tests.support.framework_venvs import verifiers_bin

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ORLGEN_"))}
    env["PYTHONPATH"] = str(REPO)
    python = verifiers_bin() / "python"
    run = subprocess.run(
        [str(python), str(SCHEMAS), str(out), *modules], capture_output=True, text=True, timeout=600, env=env
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def inline_refs(schema: Any, defs: dict[str, Any] | None = None, open_refs: tuple[str, ...] = ()) -> Any:
    """`schema` with every local `$ref` replaced by its definition (and `$defs` dropped); a
    recursive one is left a `$ref` inside its own expansion."""
    if defs is None and isinstance(schema, dict):
        defs = schema.get("$defs", {})
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if ref is not None and ref not in open_refs:
            target = (defs or {}).get(ref.rsplit("/", 1)[-1], {})
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return {**inline_refs(target, defs, (*open_refs, ref)), **inline_refs(rest, defs, open_refs)}
        return {k: inline_refs(v, defs, open_refs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [inline_refs(item, defs, open_refs) for item in schema]
    return schema


def verifiers_view(group: Group, tools: list[dict[str, Any]]) -> View:
    """What the verifiers model is shown of `group`: wire name → function JSON."""
    from orlgen.plan.planner import tool_names

    wire_of = {shown: wire for wire, (_, shown) in tool_names(group.snapshot).items()}
    view = View()
    for tool in tools:
        function = {k: tool[k] for k in ("name", "description")}
        view.functions[wire_of[tool["name"]]] = {**function, "parameters": inline_refs(tool["parameters"])}
    for tool in group.tools:
        if tool.name not in view.functions:
            view.missing[tool.name] = "not listed"
    return view


def system_prompt(source: str) -> str:
    """A `_skyrl` module's SYSTEM_PROMPT, read from its source without importing it."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SYSTEM_PROMPT":
            return str(ast.literal_eval(node.value))
    raise ValueError("no SYSTEM_PROMPT")


def skyrl_view(group: Group, prompt: str) -> View:
    """What the skyrl model is shown of `group`: wire name → function JSON, from the prompt's lines."""
    from orlgen.plan.planner import tool_names

    wire_of = {shown: wire for wire, (_, shown) in tool_names(group.snapshot).items()}
    view = View()
    block = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    for line in block.split("\n"):
        function = json.loads(line)["function"]
        view.functions[wire_of[function["name"]]] = function
    view.missing = {tool.name: "not in the prompt" for tool in group.tools if tool.name not in view.functions}
    return view


def skyrl_own_chars(group: Group) -> int:
    """Characters of the tool lines SkyRL's own adapter writes into its system prompt."""
    lines = [
        json.dumps({"name": t.name, "arguments_schema": t.input_schema, "description": t.description})
        for t in group.tools
    ]
    return sum(len(line) for line in lines)


def surface_rows(groups: list[Group], views: dict[str, dict[str, View]]) -> list[Row]:
    """Per env and trainer: characters shown, and facts shown structurally, as text, or lost."""
    rows = []
    for group in groups:
        for trainer, by_env in views.items():
            view = by_env[group.name]
            rows.append(Row(trainer, group.name, "surface chars", prompt_chars(list(view.functions.values()))))
            counts = Counter(
                classify(fact, view).status
                for tool in group.tools
                for fact in tool_facts(group.set_name, group.name, tool)
            )
            rows += [
                Row(trainer, group.name, f"facts {status}", counts[status]) for status in ("structural", "text", "lost")
            ]
    return rows


def trainer_surface_rows(groups: list[Group] | None = None) -> list[Row]:
    """The surface of each trainer's module of the example envs, side by side."""
    from orlgen.render.jobs import render_module

    groups = example_groups() if groups is None else groups
    prompts = {g.name: system_prompt(render_module(g.snapshot, None, "skyrl")) for g in groups}
    with tempfile.TemporaryDirectory(prefix="orlgen-trainers-") as tmp:
        out = Path(tmp)
        modules = {
            g.name: render_verifiers(REPO / "generated" / f"{g.snapshot.name}.snapshot.json", out) for g in groups
        }
        listed = advertised(out, list(modules.values()))
        views = {
            "trl": {g.name: orlgen_view(g, out) for g in groups},
            "verifiers": {g.name: verifiers_view(g, listed[modules[g.name]]) for g in groups},
            "skyrl": {g.name: skyrl_view(g, prompts[g.name]) for g in groups},
        }
    rows = surface_rows(groups, views)
    for group in groups:
        rows += [
            Row("skyrl", group.name, "system turn chars", len(prompts[group.name]), "head, tool lines, tail"),
            Row("skyrl-own", group.name, "surface chars", skyrl_own_chars(group), "raw schema + raw docstring lines"),
        ]
    return rows


CALLS = 20  # timed calls per path
# Run in the skyrl venv: `count` through `OrsTextEnv.step` and through the env's own `Episode.call`
# (the TRL module's path), interleaved CALLS times each so both see the same machine load; prints
# the two medians in seconds.
_STEP_TIMER = """
import json, statistics, sys, time
import skyrl_gym
module = __import__(sys.argv[1])
module.register()
env = skyrl_gym.make(sys.argv[1].removesuffix("_skyrl"),  # the env id rows carry: the env's module name
                     env_config={"base_url": sys.argv[2]}, extras={"split": "train", "task_index": 0, "max_turns": 10**6})
env.init([])
call = '<tool_call>{"name": "count", "arguments": {}}</tool_call>'
paths = {"step": lambda: env.step(call), "episode": lambda: env.episode.call("count", {})}
times = {name: [] for name in paths}
for _ in range(int(sys.argv[3])):
    for name, run in paths.items():
        started = time.perf_counter()
        out = run()
        times[name].append(time.perf_counter() - started)
        assert "Error" not in json.dumps(out), out
env.close()
print(statistics.median(times["step"]), statistics.median(times["episode"]))
"""


def timing_rows(work: Path, rollouts: int = 16) -> list[Row]:
    """On the both-env (tests/support/envs/both.py, openreward SDK server on loopback), with the
    scripted endpoint: a tool call (`count`) through the raw SDK, the TRL module, the verifiers
    module under `vf-eval` and the skyrl env's `step`, and the wall of `rollouts` winning rollouts under `vf-eval` and
    `orlgen eval` (same env, same endpoint, 8 at once).

    A verifiers call is timed from outside, as the gap between the endpoint answering one `count`
    call and receiving the next request: the harness's turn, the MCP call to the tool server,
    its state pull and push to the host, and the ORS call itself. Its overhead is that gap minus
    the raw call."""
    import openreward

    from tests.support.modules import generated
    from tests.support.servers.both import BothServer
    from tests.support.verifiers_eval import vf_eval

    module = generated("tests.support.envs.both:Both", work)
    name = render_verifiers(Path(module.__file__).with_name("both.snapshot.json"), work)
    rows = []
    with BothServer("openreward-sdk") as server:
        client = openreward.OpenReward(base_url=server.url)
        environment = client.environments.get("both", variant="both", base_url=server.url)
        with environment.session(split="train", index=0) as session:
            raw = _timed(lambda: session.call_tool("count", {}))
        trl = module.BothEnv(base_url=server.url)
        trl.reset(split="train", task_index=0)
        trl_call = _timed(trl.count)
        trl.get_reward()
        calls = vf_eval(name, work, work / "calls", {"ORLGEN_BOTH_URL": server.url}, script=f"calls:{CALLS}")
        gaps = _gaps(calls.requests)
        rows += [
            Row("raw", "both", "call ms", raw * 1000, f"openreward SDK session.call_tool, median of {CALLS}"),
            Row("trl", "both", "call ms", trl_call * 1000, f"BothEnv.count(), median of {CALLS}"),
            Row("verifiers", "both", "call ms", median(gaps) * 1000, f"vf-eval turn gap, median of {len(gaps)}"),
            Row("verifiers", "both", "call overhead ms", (median(gaps) - raw) * 1000, "turn gap minus the raw call"),
            Row("trl", "both", "call overhead ms", (trl_call - raw) * 1000, "TRL method minus the raw SDK call"),
            *_skyrl_call_rows(work, server.url),
        ]
        wall = vf_eval(name, work, work / "wall", {"ORLGEN_BOTH_URL": server.url}, tasks=rollouts // 4, rollouts=4)
        assert [t["rewards"]["env_reward"]["score"] for t in wall.traces] == [1.0] * rollouts
        rows.append(Row("verifiers", "both", f"wall s, {rollouts} rollouts", wall.wall, "vf-eval, -c 8"))
        rows.append(
            Row(
                "trl",
                "both",
                f"wall s, {rollouts} rollouts",
                _orlgen_eval(work, server.url, rollouts),
                "orlgen eval, --concurrency 8",
            )
        )
    return rows


def _skyrl_call_rows(work: Path, url: str) -> list[Row]:
    """`OrsTextEnv.step()` with one `<tool_call>` of `count`, and the same env's `Episode.call` (the
    TRL path), interleaved in the skyrl venv so both see the same machine load."""
    from orlgen.render.jobs import render_module
    from orlgen.snapshot.model import load

    from tests.support.framework_venvs import skyrl_python

    (work / "both_skyrl.py").write_text(render_module(load(work / "both.snapshot.json"), None, "skyrl"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ORLGEN_"))}
    env["PYTHONPATH"] = f"{work}{os.pathsep}{REPO}"
    timer = [str(skyrl_python()), "-c", _STEP_TIMER, "both_skyrl", url, str(CALLS)]
    done = subprocess.run(timer, capture_output=True, text=True, timeout=600, env=env, cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    step, episode = (float(value) for value in done.stdout.split()[-2:])
    return [
        Row("skyrl", "both", "call ms", step * 1000, f"OrsTextEnv.step(one <tool_call>), median of {CALLS}"),
        Row("skyrl", "both", "episode call ms", episode * 1000, "Episode.call of the same env, interleaved with step"),
        Row("skyrl", "both", "call overhead ms", (step - episode) * 1000, "step minus Episode.call (the TRL path)"),
    ]


def shim_rows(repeats: int = 10_000) -> list[Row]:
    """What `step` adds to a call, without the network: parsing the turn's `<tool_call>`, mapping
    its arguments to wire names, laying out the `<tool_response>` (CPU, this process)."""
    from orlgen.runtime.hermes import Tool, parse_tool_calls, tool_response

    from tests.support.envs.both import GuessParams

    tool = Tool("guess", GuessParams)
    text = '<tool_call>{"name": "guess", "arguments": {"guess": 42}}</tool_call>'
    started = time.process_time()
    for _ in range(repeats):
        (call,) = parse_tool_calls(text)
        tool.wire_arguments(call.arguments)  # type: ignore[union-attr]
        tool_response(["too low"], "markers")
    per_call = (time.process_time() - started) / repeats
    return [Row("skyrl", "both", "shim cpu us", per_call * 1e6, f"parse, map, answer: mean of {repeats}")]


def _timed(call: Callable[[], Any]) -> float:
    """The median seconds of `CALLS` calls."""
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return median(times)


def _gaps(requests: list[dict[str, Any]]) -> list[float]:
    """Seconds between consecutive requests of one rollout whose last message answers `count`."""
    gaps = []
    for before, after in itertools.pairwise(requests):
        last = after["messages"][-1]
        if (
            last.get("role") == "tool"
            and last.get("name") == "count"
            and len(after["messages"]) > len(before["messages"])
        ):
            gaps.append(after["_received"] - before["_received"])
    return gaps


def _orlgen_eval(work: Path, env_url: str, rollouts: int) -> float:
    """Seconds `orlgen eval` takes for `rollouts` rollouts of the both module against the stub."""
    from tests.support.verifiers_eval import Stub

    stub_dir = work / "orlgen-eval"
    stub_dir.mkdir()
    with Stub(stub_dir) as stub:
        command = [
            ORLGEN_CLI, "eval", str(work / "both.py"), "--base-url", stub.url, "--model", "stub",
            "--api-key-env", "STUB_API_KEY", "--split", "train", "-n", str(rollouts // 4), "-k", "4",
            "--concurrency", "8", "--env-url", env_url, "--format", "json",
        ]  # fmt: skip
        started = time.monotonic()
        run = subprocess.run(
            command, capture_output=True, text=True, timeout=900, env={**os.environ, "STUB_API_KEY": "unused"}
        )
        wall = time.monotonic() - started
    assert run.returncode == 0, run.stderr[-3000:]
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.trainers", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = trainer_surface_rows()
    with tempfile.TemporaryDirectory(prefix="orlgen-trainers-") as tmp:
        rows += timing_rows(Path(tmp))
    rows += shim_rows()
    for row in rows:
        print(f"{row.trainer:<10} {row.env:<12} {row.measure:<18} {row.value:>10g}  {row.note}")
    if args.json:
        write_json(args.json, [asdict(row) for row in rows], sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
