"""The verl side of `python -m bench.verl_calls` (which starts it): run in the verl venv by path,
`python bench/verl_calls_child.py ENV_URL`, with PYTHONPATH holding this repository and its
`generated/` (orlgen and `helpdesk_verl`); nothing of this repository's `tests` or `bench` is
imported (verl's wheel installs a top-level `tests` package of its own).

As verl's tests/experimental/agent_loop/test_call_tool_on_cpu.py (and
shared/trainer-recipes/verl/run_call_tool.py) drive it: a `MagicMock(spec=ToolAgentLoop)` with
verl's own `ToolAgentLoop._call_tool` bound to it, its `tools` loaded from
generated/helpdesk_verl_tools.yaml by verl's `initialize_tools_from_config`. The trajectory's
episode is registered under its request id as the module's agent loop registers it in
`_make_request_id` (`orlgen.runtime.verl._episodes`), its session opened on train task 0, so
each `_call_tool` goes verl's way into the generated `OrsTool.execute`, the Episode and one HTTP
request. No model, no GPU.

Prints `@@ {"ready": ...}` once the session is open, then for each line on stdin, `SIDE TOOL N [ARGUMENTS]`
(SIDE `verl`: `_call_tool`; `episode`: the same episode's `Episode.call` directly, the path
every orlgen trainer shares, on this process's one event loop's thread for both), answers one
`@@ `-prefixed JSON line: the seconds of each of the N calls and the last answer's first 80 characters.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from unittest.mock import MagicMock

import helpdesk_verl
from orlgen.runtime import verl as shim
from orlgen.runtime.episode import Episode
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
from verl.experimental.agent_loop.tool_parser import FunctionCall
from verl.tools.tool_registry import initialize_tools_from_config

REPO = Path(__file__).resolve().parent.parent
REQUEST_ID = "bench-verl-calls"
ANSWER = "@@ "  # answer lines start with this: verl's BaseTool prints each tool's schema as it loads it


@dataclass
class AgentData:  # the attributes `_call_tool` and `OrsTool.execute` read of verl's AgentData
    request_id: str
    tools_kwargs: dict = field(default_factory=dict)


def main(env_url: str) -> None:
    tools = initialize_tools_from_config(str(REPO / "generated" / "helpdesk_verl_tools.yaml"))
    loop = MagicMock(spec=ToolAgentLoop)
    loop.tools = {tool.name: tool for tool in tools}
    loop.max_tool_response_length, loop.tool_response_truncate_side = 10000, "left"
    loop._call_tool = ToolAgentLoop._call_tool.__get__(loop, ToolAgentLoop)
    agent_loop = helpdesk_verl.HelpdeskAgentLoop
    episode = Episode(agent_loop.SPEC, name=agent_loop.NAME, owner=agent_loop, base_url=env_url)
    prompt = episode.start("train", 0)
    if episode.state.outcome == "env_error":
        raise RuntimeError(f"the session did not open: {prompt.text}")
    shim._episodes[REQUEST_ID] = (episode, False)  # as OrsAgentLoop._make_request_id registers it
    agent_data = AgentData(REQUEST_ID)
    calls = helpdesk_verl.CALLS

    async def verl_calls(tool: str, arguments: str, n: int) -> tuple[list[float], str]:
        times, text = [], ""
        call = FunctionCall(name=tool, arguments=arguments)
        for _ in range(n):
            started = time.perf_counter()
            response, _, _ = await loop._call_tool(call, agent_data.tools_kwargs, agent_data)
            times.append(time.perf_counter() - started)
            text = response.text or ""
        return times, text

    async def episode_calls(tool: str, arguments: str, n: int) -> tuple[list[float], str]:
        times, text = [], ""
        wire, params = calls[tool].wire, calls[tool].params
        parsed = json.loads(arguments)
        for _ in range(n):
            started = time.perf_counter()
            step = episode.call(wire, parsed, params)
            times.append(time.perf_counter() - started)
            text = step.text
        return times, text

    runner = asyncio.new_event_loop()
    print(ANSWER + json.dumps({"ready": True, "tools": sorted(loop.tools)}), flush=True)
    for line in sys.stdin:
        side, tool, count, *rest = line.split(maxsplit=3)
        arguments = rest[0].strip() if rest else "{}"
        run = verl_calls if side == "verl" else episode_calls
        times, text = runner.run_until_complete(run(tool, arguments, int(count)))
        print(ANSWER + json.dumps({"times": times, "answer": text[:80]}), flush=True)
    shim._episodes.pop(REQUEST_ID, None)
    episode.close()
    runner.close()


if __name__ == "__main__":
    main(sys.argv[1])
