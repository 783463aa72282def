"""Generated modules as `environment_factory` of TRL's `AsyncGRPOTrainer`, driven for real.

What runs: TRL's own `AsyncRolloutWorker` (trl.experimental.async_grpo) in the spawned child
process it starts, with its thread pool calling `reset`, the tools and `get_reward` of generated
adapters concurrently, against real ORS servers on loopback; its generation requests go to the tiny
real model of `tests/support/models/tiny_qwen3.py` served behind `/v1/completions` (`tests/support/models/completion_server.py`).
What does not run: vLLM itself (no CPU build here; the worker refuses to start without it, so the
test lifts that import guard and nothing else) and the trainer's side: `AsyncGRPOTrainer`'s
optimisation loop and its NCCL weight transfer to vLLM. The worker's output, scored
`RolloutSample`s on its queue, is exactly what that trainer consumes.

The tiny model is first taught (supervised steps on the exact prompts the worker renders) to
call the task's tool and then say "done": `finish()` on counting tasks, `echo(text="hello")` on
echo tasks, so the rollouts make real tool calls and the server's verdicts are known.
"""

from __future__ import annotations

import functools
import importlib
import json
import queue
import sys

import pytest
from orlgen.runtime.trl.tools import tool_methods
from orlgen.serve import ServerProcess

from tests.support.models.completion_server import CompletionModel, serving_completions
from tests.support.models.tiny_qwen3 import EOS_TOKEN, build_model, build_tokenizer, teach
from tests.support.modules import generated
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.slow,  # TRL's async rollout worker in a spawned child, a taught model
    pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning"),
]

ROLLOUTS = 16  # per run: 4 groups of 4 generations, 8 in flight at once


@pytest.fixture(scope="module")
def counting(tmp_path_factory):
    """The generated counting module, importable by name in the worker's spawned child."""
    out = tmp_path_factory.mktemp("counting")
    module = generated("tests.support.envs.counting:Counting", out)
    sys.path.insert(0, str(out))  # the child gets the parent's sys.path when it is spawned
    yield module
    sys.path.remove(str(out))


@pytest.fixture(scope="module")
def echo():
    return importlib.import_module("generated.echo")


@pytest.fixture(scope="module")
def count_file(tmp_path_factory):
    return tmp_path_factory.mktemp("counts") / "counts.json"


@pytest.fixture(scope="module")
def counting_url(count_file):
    import os

    old = os.environ.get("ORLGEN_COUNT_FILE")
    os.environ["ORLGEN_COUNT_FILE"] = str(count_file)
    try:
        with ServerProcess("tests.support.envs.counting:Counting") as server:
            yield server.url
    finally:
        if old is None:
            os.environ.pop("ORLGEN_COUNT_FILE")
        else:
            os.environ["ORLGEN_COUNT_FILE"] = old


def counts(count_file):
    return json.loads(count_file.read_text()) if count_file.exists() else {"opened": 0, "closed": 0}


class Renderer:
    """Renders a conversation exactly as the worker does for one environment class."""

    def __init__(self, tokenizer, env):
        from trl.chat_template_utils import (
            get_training_chat_template,
            is_chat_template_prefix_preserving,
        )

        self.tokenizer = tokenizer
        self.tools = tool_methods(env)
        prefix_preserving = is_chat_template_prefix_preserving(tokenizer)
        self.chat_template = None if prefix_preserving else get_training_chat_template(tokenizer)

    def ids(self, messages):
        return self.tokenizer.apply_chat_template(
            messages, return_dict=False, add_generation_prompt=True, tools=self.tools, chat_template=self.chat_template
        )


def lesson(tokenizer, env, row, call, answer):
    """(prompt, completion) pairs that teach: on this row's prompt, make `call`; after the tool's
    `answer`, say "done"."""
    from trl.chat_template_utils import add_response_schema, parse_response

    tokenizer = add_response_schema(tokenizer)
    render = Renderer(tokenizer, env)
    eos = [tokenizer.convert_tokens_to_ids(EOS_TOKEN)]
    user = {**row["prompt"][-1], "content": row["prompt"][-1]["content"] + env.reset(**row)}
    first = render.ids([*row["prompt"][:-1], user])
    call_ids = tokenizer(call, add_special_tokens=False)["input_ids"] + eos
    assistant = parse_response(tokenizer, call_ids, prefix=first, tools=render.tools)
    name = assistant["tool_calls"][0]["function"]["name"]
    second = render.ids([*row["prompt"][:-1], user, assistant, {"role": "tool", "name": name, "content": answer}])
    done = tokenizer("done", add_special_tokens=False)["input_ids"] + eos
    return [(first, call_ids), (second, done)]


@pytest.fixture(scope="module")
def model_url(counting, counting_url, echo, echo_url):
    """The tiny model, taught both tasks, served behind /v1/completions."""
    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    examples = []
    for index in (0, 1):
        row = counting.build_dataset(indices=[index])[0]
        examples += lesson(
            tokenizer,
            counting.CountingEnv(base_url=counting_url),
            row,
            '<tool_call>\n{"name": "finish", "arguments": {}}\n</tool_call>',
            "finished",
        )
        row = echo.build_dataset(indices=[index])[0]
        examples += lesson(
            tokenizer,
            echo.EchoEnv(base_url=echo_url),
            row,
            '<tool_call>\n{"name": "echo", "arguments": {"text": "hello"}}\n</tool_call>',
            "correct" if index == 0 else "wrong: 'hello'",
        )
    assert teach(model, examples, steps=120) < 0.05
    with serving_completions(CompletionModel(model, tokenizer.convert_tokens_to_ids(EOS_TOKEN))) as url:
        yield url, tokenizer


def run_worker(model_url, dataset, environment_factory, monkeypatch, rollouts=ROLLOUTS):
    """Start TRL's rollout worker (a spawned child), take `rollouts` scored rollouts, stop it."""
    from accelerate.state import PartialState
    from trl.experimental.async_grpo import async_rollout_worker

    url, tokenizer = model_url
    PartialState()  # the worker logs through accelerate, as inside the trainer
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    # vLLM has no CPU build here and the worker imports nothing from it; generation goes to `url`.
    monkeypatch.setattr(async_rollout_worker, "is_vllm_available", lambda: True)
    worker = async_rollout_worker.AsyncRolloutWorker(
        model_name="tiny-qwen3",
        dataset=dataset,
        reward_funcs=[],  # the adapters own the reward: get_reward() is the only source
        processing_class=tokenizer,
        eos_token_ids=[tokenizer.convert_tokens_to_ids(EOS_TOKEN)],
        environment_factory=environment_factory,
        num_generations=4,
        max_inflight_tasks=8,
        vllm_server_url=url,
        max_tokens=40,
        temperature=0.3,
        max_tool_calling_iterations=2,
        request_timeout=60,
        child_ready_timeout=240,
    )
    samples = []
    worker.start()
    try:
        while len({(s.group_id, id(s)) for s in samples}) < rollouts:
            worker.check_health(stale_after_s=120)
            try:
                samples.append(worker.rollout_buffer.get(timeout=1.0))
            except queue.Empty:
                continue
    finally:
        worker.stop()
    return samples


def test_async_worker_single_env(counting, counting_url, count_file, model_url, monkeypatch):
    from datasets import Dataset

    before = counts(count_file)
    rows = counting.build_dataset(indices=[0, 1, 2, 3])
    samples = run_worker(
        model_url,
        Dataset.from_list(list(rows)),
        functools.partial(counting.CountingEnv, base_url=counting_url),
        monkeypatch,
    )

    assert len(samples) >= ROLLOUTS and {s.group_id for s in samples} >= {0, 1, 2, 3}
    rewards = [s.metrics["rewards/CountingEnv"] for s in samples]
    assert all(r == 1.0 for r in rewards), rewards  # every rollout called finish(): the server's reward
    assert all(s.metrics["reward"] == 1.0 for s in samples)
    assert all(s.metrics["tools/call_frequency"] == 1.0 for s in samples)
    # One session per rollout, each deleted: when the child has exited, the server closed all it opened.
    assert wait_for(lambda: counts(count_file)["closed"] == counts(count_file)["opened"], 20)
    assert counts(count_file)["opened"] - before["opened"] >= ROLLOUTS


def test_async_worker_mixture(counting, counting_url, count_file, echo, model_url, monkeypatch):
    """Two environments in one run, one reward column per class, each rollout scored by its own
    class only (the other column is NaN for it). The echo adapter gets no URL: its target is
    `examples.echo:Echo`, which the spawned worker serves itself (`orlgen.runtime.session.local`)."""
    import math

    from datasets import Dataset

    rows = [{"environment": "counting", **row} for row in counting.build_dataset(indices=[0, 1])]
    rows += [
        {"environment": "echo", **{k: row[k] for k in ("prompt", "split", "task_index")}}
        for row in echo.build_dataset(indices=[0, 1])
    ]
    rows = [rows[0], rows[2], rows[1], rows[3]]
    for row in rows:
        row.pop("n", None), row.pop("setup_seconds", None)
    factories = {
        "counting": functools.partial(counting.CountingEnv, base_url=counting_url),
        "echo": echo.EchoEnv,
    }
    samples = run_worker(model_url, Dataset.from_list(rows), factories, monkeypatch)

    by_group = {}
    for s in samples:
        by_group.setdefault(s.group_id, []).append(s)
    for group_id, group in by_group.items():
        env = rows[group_id % len(rows)]
        mine, other = ("CountingEnv", "EchoEnv") if env["environment"] == "counting" else ("EchoEnv", "CountingEnv")
        assert all(math.isnan(s.metrics[f"rewards/{other}"]) for s in group)
        expected = 0.0 if env["environment"] == "echo" and env["task_index"] == 1 else 1.0  # "hello" wins task 0 only
        assert [s.metrics[f"rewards/{mine}"] for s in group] == [expected] * len(group), (env, group_id)
    assert wait_for(lambda: counts(count_file)["closed"] == counts(count_file)["opened"], 20)


def test_async_worker_with_environment_owned_data(counting, counting_url, count_file, model_url, monkeypatch):
    """AsyncGRPOTrainer with `train_dataset=None` feeds the worker placeholder rows (one empty user
    turn each, as trl 1.16 builds them); every rollout's `reset` draws its task."""
    import math

    from datasets import Dataset

    before = counts(count_file)
    placeholder = Dataset.from_dict({"prompt": [[{"role": "user", "content": ""}]] * 4})
    samples = run_worker(
        model_url, placeholder, functools.partial(counting.CountingEnv, base_url=counting_url), monkeypatch, rollouts=8
    )
    rewards = [s.metrics["rewards/CountingEnv"] for s in samples]
    assert len(samples) >= 8 and sum(not math.isnan(r) for r in rewards) >= 6, rewards  # the tasks were played
    assert wait_for(lambda: counts(count_file)["closed"] == counts(count_file)["opened"], 20)
    assert counts(count_file)["opened"] - before["opened"] >= 8
