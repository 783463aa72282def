"""The hostile example env, served for real: every tool reaches the server under its wire name,
and no text from the server is ever executed (the canary file never appears)."""

from __future__ import annotations

import inspect
import json

import pytest
from orlgen.capture.live import capture
from orlgen.render.jobs import generate
from orlgen.review.files import write_files
from orlgen.runtime.trl.tools import tool_methods
from orlgen.serve import ServerProcess
from transformers.utils import get_json_schema

from examples.hostile import CANARY
from tests.support.modules import REPO, load_module


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, monkeypatch_module):
    out = tmp_path_factory.mktemp("hostile")
    monkeypatch_module.chdir(out)  # a canary would be written here
    snapshot = capture("examples.hostile:Hostile")
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    module = load_module(out / "hostile.py")
    with ServerProcess("examples.hostile:Hostile") as server:
        yield module, module.HostileEnv(base_url=server.url), out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def call(env, method, **arguments):
    return json.loads(getattr(env, method)(**arguments))


def test_every_tool_is_shown_under_its_wire_name(hostile):
    module, env, _ = hostile
    methods = {
        fn.__name__: name
        for name, fn in inspect.getmembers(type(env), inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }
    assert methods == {
        "reset": "reset_",
        "reward": "reward_",
        "get_reward": "get_reward_",
        "_private": "private",
        "class": "class_",
        "submit-solution": "submit_solution",
        "draft4": "draft4",
    }
    assert set(module.TOOLS) == set(methods)
    for wire, name in methods.items():
        assert get_json_schema(getattr(env, name))["function"]["name"] == wire


def test_renamed_parameters_reach_the_server_under_wire_names(hostile):
    _, env, _ = hostile
    env.reset(task_index=0)
    assert call(env, "reset_", from_="x", file_path="p", self_=3) == {"file-path": "p", "from": "x", "self": 3}
    assert call(env, "reset_", from_="y") == {"from": "y"}


def test_complex_types_are_validated_and_sent(hostile):
    _, env, _ = hostile
    env.reset(task_index=0)
    sent = call(
        env,
        "reward_",
        priority=2,
        shape={"kind": "square", "side": 2},
        version="v1",
        point=(1, 2),
        tree={"label": "a", "children": [{"label": "b"}]},
    )
    assert sent["priority"] == 2 and sent["point"] == [1, 2] and sent["shape"] == {"kind": "square", "side": 2.0}
    assert sent["tree"]["children"][0]["label"] == "b"
    error = env.reward_(priority=5, shape={"kind": "triangle"}, version="v2")
    assert (
        error.startswith("Error: invalid arguments for reward: priority:") and "shape" in error and "version" in error
    )
    schema = get_json_schema(env.reward_)["function"]["parameters"]["properties"]
    assert schema["priority"]["enum"] == [1, 2, 3] and schema["version"]["enum"] == ["v1"]
    assert schema["point"]["prefixItems"] == [{"type": "integer"}, {"type": "integer"}]
    assert '"circle"' in schema["shape"]["description"] and "<Node>" in schema["tree"]["description"]


def test_descriptions_survive_the_docstring_parser(hostile):
    _, env, _ = hostile
    reset = get_json_schema(env.reset_)["function"]
    assert "is mentioned mid-line" in reset["description"] and "Returns" in reset["description"]
    text = get_json_schema(env.get_reward_)["function"]["parameters"]["properties"]["text"]["description"]
    assert '"""' in text and "\\ at the end\\" in text
    draft4 = get_json_schema(env.draft4)["function"]
    assert "__import__" in draft4["description"] and "{{ ''.__class__ }}" in draft4["description"]
    assert draft4["parameters"]["properties"]["pair"]["prefixItems"] == [{"type": "string"}, {"type": "number"}]
    assert draft4["parameters"]["properties"]["tags"]["additionalProperties"] == {"type": "string"}


def test_no_argument_tools_and_the_episode_end(hostile):
    _, env, _ = hostile
    env.reset(task_index=0)
    assert call(env, "private") == {} and call(env, "class_") == {} and call(env, "draft4", value=None) == {}
    assert call(env, "submit_solution", text="q") == {"text": "q"}
    assert (env.reward, env.finished) == (1.0, True)


def test_nothing_from_the_server_was_executed(hostile):
    _, _, out = hostile
    assert not (out / CANARY).exists() and not (REPO / CANARY).exists()


def test_unicode_property_names_validate_under_their_wire_name(tmp_path):
    """`ﬁle` is `file` to Python's parser (NFKC): the model must still expect the key `ﬁle`."""
    from orlgen.snapshot.model import Snapshot, Split, SplitTasks, Target, Tool

    schema = {
        "type": "object",
        "properties": {"ﬁle": {"type": "string"}, "file": {"type": "integer"}, "é": {"type": "boolean"}},
        "required": ["ﬁle"],
    }
    snapshot = Snapshot(
        name="uni",
        target=Target(kind="url", value="http://127.0.0.1:9", env="uni"),
        splits=[Split(name="train", num_tasks=0)],
        tools=[Tool(name="t", description="", input_schema=schema, shared=True)],
        terminal_tool=None,
        probed_tasks=[],
        tasks={"train": SplitTasks(coverage="none", tasks=[])},
        task_schema={"type": "object"},
    ).canonical()
    path = tmp_path / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    params = load_module(tmp_path / "uni.py").TParams
    sent = params.model_validate({"ﬁle": "a", "file": 1, "é": True}).model_dump(by_alias=True, exclude_unset=True)
    assert sent == {"ﬁle": "a", "file": 1, "é": True}


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_tool_methods_is_what_grpo_trainer_shows(hostile, tmp_path):
    """The one rule (`orlgen.runtime.trl.tools.tool_methods`) against TRL's own: a real `GRPOTrainer`
    probes the adapter at init and keeps its tool list; the hostile env's tools are named `reset`,
    `get_reward` and `_private` on the wire, so a rule that read `__name__` would differ."""
    from datasets import Dataset

    from tests.support.training import grpo_trainer

    _, env, _ = hostile
    trainer = grpo_trainer(
        tmp_path,
        environment_factory=lambda: env,
        train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}]),
        reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
    )
    assert trainer._env_tools[None] == tool_methods(env)
    assert [fn.__name__ for fn in tool_methods(type(env))] == [m.__name__ for m in tool_methods(env)]
