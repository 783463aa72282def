"""The measurement: every fact of every set against what each side shows the model (orlgen's TRL
module, TRL's binder, orlgen's agent module, orlgen's verl tool YAML), and the output blocks."""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.fidelity.classify import STATUSES, Outcome, classify
from bench.fidelity.facts import KINDS, tool_facts
from bench.fidelity.hostile import hostile_groups
from bench.fidelity.schema_walk import JSON
from bench.fidelity.sets import SETS, Group, example_groups, published_groups, sdk_groups
from bench.fidelity.views import agent_view, import_source, orlgen_view, raw_prompt_chars, trl_view, verl_view

# orlgen's TRL module, TRL's binder, orlgen's agent module, orlgen's verl tool YAML
BINDERS = ("orlgen", "trl", "agent", "verl")


def all_groups() -> list[Group]:
    return example_groups() + published_groups() + sdk_groups() + hostile_groups()


@dataclass
class Result:
    outcomes: dict[str, list[Outcome]]  # binder (`BINDERS`) → one outcome per fact
    tools: Counter  # set → number of tools
    extra: dict[str, list[str]]  # binder → functions shown that are no tool
    prompt: dict[str, dict[str, int]] = field(default_factory=dict)  # "set/group" → raw/orlgen/trl chars
    blocks: dict[str, dict[str, int]] = field(default_factory=dict)  # block type → sent/dropped (orlgen)
    seconds: float = 0.0
    # "set/group" → chars of the agent module's TOOLS functions as sent (`prompt` keeps its three)
    agent_prompt: dict[str, int] = field(default_factory=dict)
    # "set/group" → chars of the verl tool YAML's functions, as verl hands them to the chat template
    verl_prompt: dict[str, int] = field(default_factory=dict)

    def altered(self, binder: str, set_name: str | None = None, kind: str | None = None) -> list[Outcome]:
        return [
            o
            for o in self.outcomes[binder]
            if o.altered and (set_name is None or o.fact.set_name == set_name) and (kind is None or o.fact.kind == kind)
        ]

    def counts(self, binder: str, set_name: str | None = None, kind: str | None = None) -> dict[str, int]:
        found = Counter(
            o.status
            for o in self.outcomes[binder]
            if (set_name is None or o.fact.set_name == set_name) and (kind is None or o.fact.kind == kind)
        )
        return {status: found[status] for status in STATUSES}

    def lost(self, binder: str, set_name: str | None = None) -> list[Outcome]:
        return [
            o for o in self.outcomes[binder] if o.status == "lost" and (set_name is None or o.fact.set_name == set_name)
        ]

    def facts(self, set_name: str | None = None, kind: str | None = None) -> int:
        return sum(self.counts("orlgen", set_name, kind).values())

    def to_json(self) -> JSON:
        def block(set_name: str | None = None, kind: str | None = None) -> JSON:
            return {
                "facts": self.facts(set_name, kind),
                **{binder: self.counts(binder, set_name, kind) for binder in BINDERS},
                "altered": {b: len(self.altered(b, set_name, kind)) for b in BINDERS},
            }

        return {
            "sets": {s: {"tools": self.tools[s], **block(s)} for s in SETS},
            "total": {"tools": sum(self.tools.values()), **block()},
            "by_kind": {k: block(kind=k) for k in KINDS},
            "lost": {
                binder: [
                    {
                        "set": o.fact.set_name,
                        "group": o.fact.group,
                        "tool": o.fact.tool,
                        "kind": o.fact.kind,
                        "path": o.fact.path,
                        "value": o.fact.value,
                        "reason": o.reason,
                    }
                    for o in self.lost(binder)
                ]
                for binder in BINDERS
            },
            "extra_functions": self.extra,
            "prompt_chars": self.prompt,
            "agent_prompt_chars": self.agent_prompt,
            "verl_prompt_chars": self.verl_prompt,
            "output_blocks": self.blocks,
        }


def output_blocks(workdir: Path) -> dict[str, dict[str, int]]:
    """Blocks of tool outputs that reach the model, by block type: `sent` by the server, `dropped`
    on the way. `bench/blocks_env.py` is served on a loopback port and captured; each tool is
    called once through the generated adapter, and each block it sent is looked up in what the
    method returned: a text block by its text (in the returned string or a text part), an image
    block as an image part of a returned list (the content part TRL hands to a VLM)."""
    from orlgen.capture.live import capture
    from orlgen.render.jobs import render_module
    from orlgen.serve import ServerProcess

    from bench.blocks_env import BLOCKS

    counts = {kind: {"sent": 0, "dropped": 0} for kind in ("text", "image")}
    with ServerProcess("bench.blocks_env:Blocks") as server:
        module = import_source(render_module(capture(server.url)), workdir, "blocks")
        env = module.environment_factory(base_url=server.url)
        env.reset(task_index=0)
        for tool, blocks in BLOCKS.items():
            returned = getattr(env, tool)()
            for block in blocks:
                counts[block.type]["sent"] += 1
                counts[block.type]["dropped"] += not _block_shown(block, returned)
        env.get_reward()  # ends the session
    return counts


def _block_shown(block: Any, returned: Any) -> bool:
    parts = returned if isinstance(returned, list) else [{"type": "text", "text": str(returned)}]
    if block.type == "image":
        return any(isinstance(p, dict) and p.get("type") == "image" for p in parts)
    return any(isinstance(p, dict) and p.get("type") == "text" and block.text in str(p.get("text")) for p in parts)


def measure(groups: list[Group] | None = None, with_blocks: bool = True) -> Result:
    started = time.perf_counter()
    groups = all_groups() if groups is None else groups
    outcomes: dict[str, list[Outcome]] = {binder: [] for binder in BINDERS}
    extra: dict[str, list[str]] = {binder: [] for binder in BINDERS}
    tools: Counter = Counter()
    prompt: dict[str, dict[str, int]] = {}
    agent_prompt: dict[str, int] = {}
    verl_prompt: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="orlgen-fidelity-") as tmp:
        for group in groups:
            views = {
                "orlgen": orlgen_view(group, Path(tmp)),
                "trl": trl_view(group),
                "agent": agent_view(group, Path(tmp)),
                "verl": verl_view(group),
            }
            prompt[f"{group.set_name}/{group.name}"] = {
                "raw": raw_prompt_chars(group.tools),
                **{binder: views[binder].prompt_chars() for binder in ("orlgen", "trl")},
            }
            agent_prompt[f"{group.set_name}/{group.name}"] = views["agent"].prompt_chars()
            verl_prompt[f"{group.set_name}/{group.name}"] = views["verl"].prompt_chars()
            for binder, view in views.items():
                extra[binder] += [f"{group.name}:{name}" for name in view.extra]
            for tool in sorted(group.tools, key=lambda t: t.name):
                tools[group.set_name] += 1
                for fact in tool_facts(group.set_name, group.name, tool):
                    for binder, view in views.items():
                        outcomes[binder].append(classify(fact, view))
        blocks = output_blocks(Path(tmp)) if with_blocks else {}
    return Result(outcomes, tools, extra, prompt, blocks, time.perf_counter() - started, agent_prompt, verl_prompt)
