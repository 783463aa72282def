"""Trajectories of a generated verl module through verl's own `ToolAgentLoop.run()` on CPU, in the
verl venv (`tests/support/framework_venvs.py`): `python tests/support/verl_trajectories.py
MODULE_DIR MODULE ENV_URL SCENARIO [MORE...]` (SCENARIO: `both`, the both-env's trajectories, MORE
tool configs to load; `quiz`, examples/quiz.py answered in a final message; `graded`, a JSON plan
of the graded env's rollouts on stdin played by MODULE and by each MORE `DIR:MODULE`, one module
per reward rule). Run by path, not as `-m`: verl's wheel
installs a top-level `tests` package that would shadow this repository's. Prints one JSON object.

As verl's own CPU tests and shared/trainer-recipes/verl/run_agent_loop.py do, only the model and
the tokenizer are stand-ins: the loop is built without `AgentLoopBase.__init__` (which wants a
tokenizer and an inference server), its `server_manager.generate`, tool parser and four
Continuous-Token helpers replaced by a script (each model turn: the calls it makes, or the text of
a final answer). Tools come from the generated tool YAML through verl's `initialize_tools_from_config`,
the loop from verl's registry, where the module's `@register` put it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

MODULE_DIR, MODULE, ENV_URL, SCENARIO, *MORE = sys.argv[1:]

from verl.experimental.agent_loop import agent_loop  # noqa: E402
from verl.experimental.agent_loop.tool_parser import FunctionCall  # noqa: E402
from verl.tools.tool_registry import initialize_tools_from_config  # noqa: E402


def load(module_dir: str, name: str) -> tuple:
    """A generated verl module, its tools (from its tool YAML) and its registered loop's class path."""
    sys.path.insert(0, module_dir)
    loaded = __import__(name)
    tools = initialize_tools_from_config(str(Path(module_dir) / f"{name.removesuffix('_verl')}_verl_tools.yaml"))
    return loaded, tools, agent_loop._agent_loop_registry[loaded.AGENT_NAME]["_target_"]


module, tools, loop_class = load(MODULE_DIR, MODULE)


def make_loop(script: list[list[tuple[str, str]]], tools=tools, loop_class=loop_class):
    """The module's registered loop, its model a script."""
    path, _, name = loop_class.rpartition(".")
    loop = object.__new__(getattr(sys.modules[path], name))
    loop.rollout_config = SimpleNamespace(full_determinism=False)
    loop.processor, loop.mm_processor_kwargs = None, {}
    loop.tools = {tool.name: tool for tool in tools}
    loop.tool_schemas = [tool.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for tool in tools]
    loop.max_parallel_calls, loop.max_tool_response_length, loop.tool_response_truncate_side = 1, 10000, "left"
    loop.max_assistant_turns = loop.max_user_turns = None
    loop.response_length = 1000
    loop.ors_options = {"base_url": ENV_URL}
    turns = iter(script)
    loop.seen = []  # what each tool call answered, for the test

    async def generate(**kw):
        return SimpleNamespace(
            token_ids=[7] * 4, log_probs=None, num_preempted=None, extra_fields={}, routed_experts=None
        )

    async def extract_tool_calls(response_ids, tools):
        calls = next(turns, [])
        if isinstance(calls, str):  # a final answer
            return calls, []
        return "", [FunctionCall(name=n, arguments=a, tool_call_id=f"c{i}") for i, (n, a) in enumerate(calls)]

    async def build(messages, tools=None, **kw):
        loop.prompt = [dict(message) for message in messages]  # verl appends to this list later
        return [1, 2, 3]

    async def merge_assistant(prompt_ids, response_ids, response_mask, logprobs, assistant_logprobs=None):
        return SimpleNamespace(token_ids=prompt_ids + response_ids), response_mask + [1] * len(response_ids), None

    async def merge_context(previous, messages, prompt_ids, response_mask, logprobs, tools=None):
        loop.seen = [message.get("content") for message in messages if message.get("role") == "tool"]  # the whole chat
        return SimpleNamespace(token_ids=[*prompt_ids, 9, 9]), [*response_mask, 0, 0], None

    loop.server_manager = SimpleNamespace(generate=generate)
    loop.tool_parser = SimpleNamespace(stop_token_ids=[], extract_tool_calls=extract_tool_calls)
    loop.ct_build_initial_tokens, loop.build_sglang_video_payload = build, lambda *a: None
    loop.ct_merge_assistant_token, loop.ct_merge_context_msg = merge_assistant, merge_context
    return loop


async def trajectory(row: dict, script: list[list[tuple[str, str]]], *loaded) -> dict:
    loop = make_loop(script, *loaded)
    kwargs = {key: row[key] for key in ("extra_info",)}
    out = await loop.run({}, raw_prompt=row["prompt"], **kwargs)
    return {
        "reward_score": out.reward_score,
        "extra": out.extra_fields["reward_extra_info"],
        "tool_rewards": out.extra_fields.get("tool_rewards"),
        "answers": [str(text) for text in loop.seen],
        "prompt": loop.prompt[-1]["content"],
    }


async def graded(plan: list[tuple[int, int]]) -> dict:
    """Each module's rollouts of `plan` (task index, `advance` calls; then a text answer), in order."""
    played = {}
    others = [(name, *load(module_dir, name)) for module_dir, name in (entry.rsplit(":", 1) for entry in MORE)]
    for name, loaded, its_tools, its_loop in [(MODULE, module, tools, loop_class), *others]:
        rows = list(loaded.build_dataset(num_tasks=max(task for task, _ in plan) + 1))
        played[name] = [
            await trajectory(rows[task], [[("advance", "{}")]] * calls + ["I stop here."], its_tools, its_loop)
            for task, calls in plan
        ]
    return played


async def main() -> dict:
    if SCENARIO == "graded":
        return await graded(json.loads(sys.stdin.read()))
    if SCENARIO == "quiz":  # task 0 asks for the capital of France
        rows = list(module.build_dataset(num_tasks=2))
        right, wrong = await asyncio.gather(
            trajectory(rows[0], [[("lookup", '{"topic": "geography"}')], "The answer is Paris."]),
            trajectory(rows[0], ["London."]),
        )
        return {"right": right, "wrong": wrong}
    rows = list(module.build_dataset(num_tasks=4))
    target = {0: 10, 1: 17, 2: 24, 3: 31}
    submit = lambda i: ("submit", json.dumps({"answer": target[i]}))  # noqa: E731
    played = await asyncio.gather(
        trajectory(rows[0], [[("look", "{}")], [submit(0)], []]),  # an image, then the win
        trajectory(rows[1], [[("guess", '{"guess": 500}')], [submit(1)], []]),  # a bad argument first
        trajectory(rows[2], [[("count", "{}")], []]),  # never submits: unscored
        trajectory(rows[1], [[("hint", "{}")], []]),  # a task-only tool this task lacks
    )
    more = {path: [t.tool_schema.function.name for t in initialize_tools_from_config(path)] for path in MORE}
    return {"rows": rows, "played": played, "tools": [tool.name for tool in tools], "more": more}


print(json.dumps(asyncio.run(main()), default=str))
