"""The verifiers 0.4 module (`<name>_verifiers.py`) run by verifiers itself.

Real parts only: `vf-eval` in a verifiers 0.4.0 venv built and cached by the test set-up
(`tests/support/framework_venvs.py`), against the both-env served by the openreward SDK's `Server`
on a loopback port (with the capacity middleware, which only counts sessions here), the model
being a scripted OpenAI-compatible endpoint (`tests/support/stub_openai.py`: a script, not a
model). The schema facts are compared with bench/fidelity's method on what each module's MCP
server lists, which is what the endpoint receives (the first test checks that on a real run).
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from bench.fidelity.classify import classify
from bench.fidelity.facts import tool_facts
from bench.fidelity.sets import Group, ToolSchema
from bench.fidelity.views import orlgen_view
from bench.trainers import advertised, inline_refs, render_verifiers, verifiers_view
from tests.support.modules import REPO
from tests.support.servers.both import BothServer
from tests.support.verifiers_eval import vf_eval

pytestmark = pytest.mark.slow
COUNTING = ("tests.support.servers.capacity:Faults",)
CHECKED_IN = sorted(path for path in (REPO / "generated").glob("*.snapshot.json"))


@pytest.fixture(scope="module")
def both_dir(tmp_path_factory, both_module):
    """The both-env's snapshot (captured for `both_module`) and its verifiers module, in one dir."""
    from pathlib import Path

    out = tmp_path_factory.mktemp("both_verifiers")
    render_verifiers(Path(both_module.__file__).with_name("both.snapshot.json"), out)
    return out


@pytest.fixture(scope="module")
def counted():
    """One counting server for the module's vf-eval runs (a server start is seconds of SDK
    import); each test reads what its own run added to the counts (`_sessions`)."""
    with BothServer("openreward-sdk", middleware=COUNTING) as server:
        yield server


def _stats(server) -> dict:
    return json.loads(urllib.request.urlopen(server.url + "/_stats", timeout=10).read())


def _sessions(server, before: dict) -> tuple[int, int, int]:
    """(created, deleted) since `before` (a `_stats` reading), and how many are open now."""
    now = _stats(server)
    return now["created"] - before["created"], now["deleted"] - before["deleted"], now["open"]


def test_vf_eval_scores_the_winning_script_with_a_session_per_rollout(both_dir, counted, tmp_path):
    before = _stats(counted)
    evaluated = vf_eval("both_verifiers", both_dir, tmp_path, {"ORLGEN_BOTH_URL": counted.url}, tasks=2)

    assert [trace["errors"] for trace in evaluated.traces] == [[], []]  # vf-eval exits 0 on a failed rollout
    assert [trace["rewards"]["env_reward"]["score"] for trace in evaluated.traces] == [1.0, 1.0]
    assert {trace["stop_condition"] for trace in evaluated.traces} == {"finished"}
    metrics = [trace["metrics"] for trace in evaluated.traces]
    assert metrics == [{"env_error": 0.0, "scored": 1.0, "tool_calls": 2.0, "tool_errors": 0.0, "unfinished": 0.0}] * 2
    assert _sessions(counted, before) == (2, 2, 0)

    first_turns = [
        request for request in evaluated.requests if not any(m["role"] == "assistant" for m in request["messages"])
    ]
    prompts = sorted(request["messages"][-1]["content"] for request in first_turns)
    assert prompts == [f"Task {i}: find the target number, then submit it." for i in (0, 1)]  # the session's own
    offered = {
        request["messages"][-1]["content"][5]: {t["function"]["name"] for t in request["tools"]}
        for request in first_turns
    }
    assert "hint" in offered["0"] and "hint" not in offered["1"]  # a task-only tool, on the task that offers it
    assert offered["1"] == {"count", "crash", "guess", "keys", "long", "look", "submit", "wait"}

    look = next(
        m for r in evaluated.requests for m in r["messages"] if m["role"] == "tool" and isinstance(m["content"], list)
    )
    assert [part["type"] for part in look["content"]] == ["image_url", "text"]
    assert look["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")

    listed = advertised(both_dir, ["both_verifiers"])["both_verifiers"]
    sent = {t["function"]["name"]: t["function"] for t in first_turns[0]["tools"]}
    assert [
        {"name": t["name"], "description": t["description"], "parameters": t["parameters"]}
        for t in listed
        if t["name"] in sent
    ] == [
        sent[name] for name in sorted(sent)
    ]  # what the MCP server lists is what the endpoint receives, byte for byte


def test_an_unfinished_rollout_still_deletes_its_session(both_dir, counted, tmp_path):
    """Reached through the task config's `base_url`, with no ORLGEN_BOTH_URL (the module's own
    target would be served by importing the env, which needs the openreward SDK: not in the venv)."""
    base_url = ("--env.taskset.task.base-url", counted.url)
    before = _stats(counted)
    evaluated = vf_eval("both_verifiers", both_dir, tmp_path, {}, script="idle", args=base_url)

    (trace,) = evaluated.traces
    assert trace["errors"] == [] and trace["rewards"]["env_reward"]["score"] == 0.0
    assert trace["metrics"]["unfinished"] == 1.0 and trace["metrics"]["scored"] == 0.0
    # closed by the tool server's SIGTERM handler, as verifiers stops it
    assert _sessions(counted, before) == (1, 1, 0)


# Facts the TRL module shows that the verifiers model does not see: the draft-4 tuple form
# (`items: [{string}, {number}]`) is typed `tuple[str, float]` in the TRL method's hint, but the
# params model (datamodel-code-generator's, which both modules validate with) makes it
# `list[str | float]` of at most 2, so the type of each position is lost.
KNOWN_LOST = {
    ("hostile", "items        draft4.pair[0]: string"),
    ("hostile", "items        draft4.pair[1]: number"),
}


def test_every_schema_fact_the_trl_module_shows_reaches_the_verifiers_model(tmp_path):
    from orlgen.snapshot.model import load

    groups = []
    for path in CHECKED_IN:
        snapshot = load(path)
        tools = [ToolSchema(t.name, t.description, t.input_schema, t.shared) for t in snapshot.tools]
        groups.append(Group("checked-in", snapshot.name, tools, snapshot))
    modules = {group.name: render_verifiers(path, tmp_path) for group, path in zip(groups, CHECKED_IN, strict=True)}
    listed = advertised(tmp_path, list(modules.values()))
    lost = set()
    for group in groups:
        shown, trl = verifiers_view(group, listed[modules[group.name]]), orlgen_view(group, tmp_path)
        assert (shown.missing, shown.extra) == ({}, []), group.name
        for tool in group.tools:
            for fact in tool_facts(group.set_name, group.name, tool):
                if classify(fact, trl).status != "lost" and classify(fact, shown).status == "lost":
                    lost.add((group.name, fact.label()))
    assert lost == KNOWN_LOST


def test_inline_refs_resolves_nested_definitions():
    schema = {"properties": {"a": {"$ref": "#/$defs/A", "description": "x"}}, "$defs": {"A": {"type": "object"}}}
    assert inline_refs(schema) == {"properties": {"a": {"type": "object", "description": "x"}}}
