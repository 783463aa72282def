"""The skyrl trainer beside TRL's: what its module shows the model, and what a tool call costs
through it. `skyrl_rows()` (bench/trainers.py's `Row`s, to be listed beside `verifiers_rows`).

`python -m bench.trainers_skyrl [--json PATH]`.

- Surface, per example env (bench/fidelity's method and sets): the characters of the tools JSON
  the model is shown (`prompt_chars`: each function dumped as the chat template's `tojson` does)
  and every schema fact classified as shown structurally, as text, or lost (`classify`). For
  skyrl, what the model is shown is the module's `SYSTEM_PROMPT` (rendered in memory, read from its
  source: skyrl_gym is not installed here), one JSON line per tool; also the whole system turn.
  For SkyRL's own OpenReward adapter (NovaSky-AI/SkyRL `examples/train_integrations/openreward`),
  the characters of the lines its `prepare_tasks.py` writes per tool (`{"name",
  "arguments_schema": <the raw input schema>, "description": <the raw docstring>}`, `json.dumps`
  defaults), computed from the snapshot: that adapter's code is not run here.
- Per call, on the both-env (openreward SDK server on loopback): the raw SDK `session.call_tool`,
  the TRL module's method, and `OrsTextEnv.step()` with one `<tool_call>` of the same tool (in
  the skyrl venv, `tests/support/skyrl_venv.py`); medians of `CALLS`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.common import REPO, median, write_json
from bench.fidelity.classify import classify
from bench.fidelity.facts import tool_facts
from bench.fidelity.sets import Group, example_groups
from bench.fidelity.views import View, orlgen_view, prompt_chars

CALLS = 40  # timed calls per path

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


@dataclass(frozen=True)
class Row:
    trainer: str  # "trl", "skyrl", "skyrl-own" (SkyRL's hand-written adapter), "raw"
    env: str
    measure: str  # "surface chars", "facts structural", "call ms", ...
    value: float
    note: str = ""


def skyrl_source(group: Group) -> str:
    """The skyrl module of the group's snapshot, rendered in memory."""
    from orlgen.render.jobs import render_module

    return render_module(group.snapshot, None, "skyrl")


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


def surface_rows(groups: list[Group]) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="orlgen-skyrl-") as tmp:
        for group in groups:
            prompt = system_prompt(skyrl_source(group))
            views = {"trl": orlgen_view(group, Path(tmp)), "skyrl": skyrl_view(group, prompt)}
            for trainer, view in views.items():
                rows.append(Row(trainer, group.name, "surface chars", prompt_chars(list(view.functions.values()))))
                counts = Counter(
                    classify(fact, view).status
                    for tool in group.tools
                    for fact in tool_facts(group.set_name, group.name, tool)
                )
                rows += [Row(trainer, group.name, f"facts {s}", counts[s]) for s in ("structural", "text", "lost")]
            rows.append(Row("skyrl", group.name, "system turn chars", len(prompt), "head, tool lines, tail"))
            rows.append(
                Row(
                    "skyrl-own", group.name, "surface chars", skyrl_own_chars(group), "raw schema + raw docstring lines"
                )
            )
    return rows


def call_rows(work: Path) -> list[Row]:
    """Per-call cost on the both-env: raw SDK, TRL module, skyrl env step."""
    import openreward
    from orlgen.render.jobs import render_module
    from orlgen.snapshot.model import load

    from tests.support.modules import generated
    from tests.support.servers.both import BothServer
    from tests.support.skyrl_venv import skyrl_python

    module = generated("tests.support.envs.both:Both", work)
    (work / "both_skyrl.py").write_text(render_module(load(work / "both.snapshot.json"), None, "skyrl"))
    with BothServer("openreward-sdk") as server:
        client = openreward.OpenReward(base_url=server.url)
        environment = client.environments.get("both", variant="both", base_url=server.url)
        with environment.session(split="train", index=0) as session:
            raw = _timed(lambda: session.call_tool("count", {}))
        trl = module.BothEnv(base_url=server.url)
        trl.reset(split="train", task_index=0)
        trl_call = _timed(trl.count)
        trl.get_reward()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ORLGEN_"))}
        env["PYTHONPATH"] = f"{work}{os.pathsep}{REPO}"
        timer = [str(skyrl_python()), "-c", _STEP_TIMER, "both_skyrl", server.url, str(CALLS)]
        done = subprocess.run(timer, capture_output=True, text=True, timeout=600, env=env, cwd=work)
        assert done.returncode == 0, done.stderr[-3000:]
        step, episode = (float(value) for value in done.stdout.split()[-2:])
    return [
        Row("raw", "both", "call ms", raw * 1000, f"openreward SDK session.call_tool, median of {CALLS}"),
        Row("trl", "both", "call ms", trl_call * 1000, f"BothEnv.count(), median of {CALLS}"),
        Row("skyrl", "both", "call ms", step * 1000, f"OrsTextEnv.step(one <tool_call>), median of {CALLS}"),
        Row("skyrl", "both", "episode call ms", episode * 1000, "Episode.call of the same env, interleaved with step"),
        Row("skyrl", "both", "call overhead ms", (step - episode) * 1000, "step minus Episode.call (the TRL path)"),
        Row("trl", "both", "call overhead ms", (trl_call - raw) * 1000, "TRL method minus the raw SDK call"),
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
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return median(times)


def skyrl_rows(groups: list[Group] | None = None) -> list[Row]:
    """Surface rows for the example envs, then the per-call rows."""
    rows = surface_rows(example_groups() if groups is None else groups)
    with tempfile.TemporaryDirectory(prefix="orlgen-skyrl-calls-") as tmp:
        rows += call_rows(Path(tmp))
    return rows + shim_rows()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.trainers_skyrl")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args(argv)
    rows = skyrl_rows()
    for row in rows:
        print(f"{row.trainer:10} {row.env:10} {row.measure:22} {row.value:10.2f}  {row.note}")
    if args.json:
        write_json(args.json, [asdict(row) for row in rows])


if __name__ == "__main__":
    sys.exit(main())
