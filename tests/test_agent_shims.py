"""The AReaL and ART shims of docs/trainers-agent.md (`tests/support/agent_shims.py`), played against
a real ORS server (the both-env served by the openreward SDK's server, `BothServer`) and the
scripted endpoint (`Stub`: `win` looks, submits the target and scores 1.0; `idle` looks and
answers, never submitting, so the episode is unscored), each in a child process on loopback.

AReaL runs here, without `areal` (a workflow is any class with `async run(data, **extra_kwargs)`):
AReaL's inline mode with an `httpx2` client (this venv's openai pulls httpx2, not httpx) and its
subproc mode (no kwargs: `OPENAI_BASE_URL`/`OPENAI_API_KEY`, the workflow pickled). ART 0.5.23 runs
in its cached Python 3.12 venv (`tests/support/framework_venvs.py`) on the agent module generated
here, which also plays the AReaL workflow with a real `httpx` client.

The doc and the file cannot drift: the doc's `excerpt of tests/support/agent_shims.py` blocks (the
AReaL and ART shims and their exception) each appear verbatim in the file, and every class and
function the file defines appears in one of them.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import pickle
import re
import subprocess

import httpx2
import pytest

from tests.support.agent_shims import EpisodeWorkflow, Unscored
from tests.support.modules import REPO, generated
from tests.support.servers.both import BothServer
from tests.support.verifiers_eval import Stub

DOC = REPO / "docs" / "trainers-agent.md"
SHIMS = REPO / "tests" / "support" / "agent_shims.py"
EXCERPT = re.compile(r"<!-- snippet: excerpt of tests/support/agent_shims\.py -->\n```python\n(.*?)```", re.S)
PYTHON = re.compile(r"```python\n(.*?)```", re.S)

# The ART venv's side: the generated `both_agent` from PYTHONPATH, the shims by path (a dependency
# of openpipe-art, cint 1.0.0, installs a top-level `tests` package, which shadows this repository's).
ART_CHILD = """
import asyncio, importlib.util, json, sys

import art
import httpx
from both_agent import build_dataset, run_episode

job = json.loads(sys.argv[1])
spec = importlib.util.spec_from_file_location("agent_shims", job["shims"])
shims = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shims)


def model(url):
    return art.Model(
        name="stub", project="orlgen-test", inference_base_url=url, inference_api_key="k", inference_model_name="stub"
    )


async def main():
    row, env = build_dataset("train")[0], {"base_url": job["server"]}
    won = await shims.rollout(model(job["win"]), row, run_episode=run_episode, env=env)
    rollouts = [shims.rollout(model(url), row, run_episode=run_episode, env=env) for url in (job["win"], job["idle"])]
    (group,) = await art.gather_trajectory_groups([art.TrajectoryGroup(rollouts)], pbar_desc=None, max_exceptions=1)
    async with httpx.AsyncClient() as http:
        workflow = shims.EpisodeWorkflow(run_episode, env=env)
        areal = await workflow.run(row, base_url=job["win"], api_key="k", http_client=http)
    choices = [item for item in won.messages_and_choices if not isinstance(item, dict)]
    print(json.dumps({
        "reward": won.reward,
        "items": [type(item).__name__ for item in won.messages_and_choices],
        "called": [[call.function.name for call in choice.message.tool_calls] for choice in choices],
        "metrics": won.metrics,
        "metadata": won.metadata,
        "tools": [tool["function"]["name"] for tool in won.tools],
        "guess": next(tool["function"]["parameters"] for tool in won.tools if tool["function"]["name"] == "guess"),
        "group_rewards": [trajectory.reward for trajectory in group.trajectories],
        "group_exceptions": [exception.type for exception in group.exceptions],
        "areal": areal,
        "httpx": httpx.__version__,
    }))


asyncio.run(main())
"""


@pytest.fixture(scope="module")
def both_agent(tmp_path_factory):
    """The both-env's agent module (and its TRL module and models file), generated into tmp."""
    return generated("tests.support.envs.both:Both", tmp_path_factory.mktemp("both_agent"), ("agent", "trl"))


@pytest.fixture(scope="module")
def ors_url():
    with BothServer("openreward-sdk") as server:
        yield server.url


@pytest.fixture(scope="module")
def win(tmp_path_factory):
    with Stub(tmp_path_factory.mktemp("win")) as stub:
        yield stub


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    with Stub(tmp_path_factory.mktemp("idle"), "idle") as stub:
        yield stub


def _inline(workflow: EpisodeWorkflow, row: dict, url: str) -> float:
    """`workflow.run` as AReaL's inline mode calls it: its proxy's URL, a key and an httpx client."""

    async def run() -> float:
        async with httpx2.AsyncClient() as http:
            return await workflow.run(row, base_url=url, api_key="k", http_client=http)

    return asyncio.run(run())


def test_the_areal_workflow_returns_the_envs_reward(both_agent, ors_url, win):
    workflow = EpisodeWorkflow(both_agent.run_episode, env={"base_url": ors_url})
    before = len(win.requests())
    assert _inline(workflow, both_agent.build_dataset("train")[0], win.url) == 1.0
    requests = win.requests()[before:]
    assert [request["model"] for request in requests] == ["default", "default"]  # look, then submit
    assert all(len(request["tools"]) == len(both_agent.TOOLS) for request in requests)


def test_an_unscored_episode_raises_for_areal_to_reject(both_agent, ors_url, idle):
    workflow = EpisodeWorkflow(both_agent.run_episode, env={"base_url": ors_url})
    with pytest.raises(Unscored, match=r"^train\[0\] unscored: answered$"):
        _inline(workflow, both_agent.build_dataset("train")[0], idle.url)


def test_in_subproc_mode_the_workflow_pickles_and_reads_the_endpoint_from_the_environment(
    both_agent, ors_url, win, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", win.url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    workflow = pickle.loads(pickle.dumps(EpisodeWorkflow(both_agent.run_episode, env={"base_url": ors_url})))
    assert workflow.run_episode is both_agent.run_episode
    assert asyncio.run(workflow.run(both_agent.build_dataset("train")[2])) == 1.0


def test_the_docs_shims_are_the_file_verbatim_and_cover_it():
    doc, source = DOC.read_text(encoding="utf-8"), SHIMS.read_text(encoding="utf-8")
    shown = EXCERPT.findall(doc)
    assert len(shown) == 3
    assert [block for block in shown if block not in source] == []
    defined = [node for node in ast.parse(source).body if isinstance(node, (ast.ClassDef, ast.AsyncFunctionDef))]
    assert sorted(node.name for node in defined) == ["EpisodeWorkflow", "Unscored", "rollout"]
    assert [node.name for node in defined if ast.get_source_segment(source, node) not in "".join(shown)] == []
    areal = doc.split("\n### AReaL 1.0.4\n", 1)[1].split("\n### ", 1)[0]
    art = doc.split("\n### ART 0.5.23\n", 1)[1].split("\n### ", 1)[0]
    assert EXCERPT.search(areal).group(1).startswith("class EpisodeWorkflow:")
    assert EXCERPT.search(art).group(1).startswith("async def rollout(")


def test_every_python_block_of_the_doc_compiles():
    blocks = PYTHON.findall(DOC.read_text(encoding="utf-8"))
    assert len(blocks) == 5
    for block in blocks:
        compile(block, str(DOC), "exec")


@pytest.mark.slow
def test_art_rollouts_of_the_generated_module_in_the_art_venv(both_agent, ors_url, win, idle):
    """ART's shapes from ART itself: `Choice` items at the assistant turns, the tools' schemas
    whole, an unscored rollout in the group's exceptions; and the AReaL workflow over httpx."""
    from tests.support.framework_venvs import art_python

    module_dir = os.path.dirname(both_agent.__file__)
    job = {"server": ors_url, "win": win.url, "idle": idle.url, "shims": str(SHIMS)}
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ORLGEN_", "PYTHON", "WANDB_"))}
    env["PYTHONPATH"] = f"{REPO}:{module_dir}"
    done = subprocess.run(
        [str(art_python()), "-c", ART_CHILD, json.dumps(job)],
        capture_output=True, text=True, timeout=600, cwd=module_dir, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])

    assert out["reward"] == 1.0
    assert out["items"] == ["dict", "Choice", "dict", "Choice", "dict"]  # prompt, look, its answer, submit, its answer
    assert out["called"] == [["look"], ["submit"]]
    assert out["metrics"] == {"turns": 2.0, "tool_calls": 2.0, "tool_errors": 0.0, "scored": 1.0, "env_error": 0.0}
    assert out["metadata"] == {"split": "train", "task_index": 0, "stop": "episode_over"}
    assert out["tools"] == [tool["function"]["name"] for tool in both_agent.TOOLS]  # task 0 offers `hint` too
    guess = next(tool["function"]["parameters"] for tool in both_agent.TOOLS if tool["function"]["name"] == "guess")
    assert out["guess"] == guess
    assert (out["guess"]["properties"]["guess"]["minimum"], out["guess"]["properties"]["guess"]["maximum"]) == (0, 100)
    assert out["group_rewards"] == [1.0]
    assert len(out["group_exceptions"]) == 1 and out["group_exceptions"][0].endswith(".Unscored'>")
    assert out["areal"] == 1.0 and out["httpx"].startswith("0.")
