"""The generated mixture module `generated/support_mix.py`: its dataset, and one real GRPO step on it.

The dataset tests need no server (every echo and helpdesk task is in the snapshots). The trainer
test drives a real `GRPOTrainer` with `environment_factory={"echo": ..., "helpdesk": ...}` against
both servers and checks that TRL routed every rollout, its tool schema and its tool calls to the
adapter of that rollout's environment only.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections import Counter

import pytest
from orlgen.runtime import DatasetError, scoring_metrics
from orlgen.runtime.trl.tools import tool_methods

from generated import echo, helpdesk, support_mix
from tests.support.models import tiny_qwen3 as tiny_model
from tests.support.training import Recorder, answer_ids, first_turn_ids, grpo_trainer

MODULES = {"echo": echo, "helpdesk": helpdesk}


def envs_of(data):
    return Counter(data["environment"])


def keys_of(data):
    return [(row["environment"], row["task_index"]) for row in data]


# --------------------------------------------------------------------------------------
# build_dataset
# --------------------------------------------------------------------------------------


def test_counts_give_each_environment_its_count():
    data = support_mix.build_dataset(counts={"echo": 3, "helpdesk": 5})
    assert len(data) == 8 and envs_of(data) == {"echo": 3, "helpdesk": 5}
    assert set(data["split"]) == {"train"}
    assert all(prompt == [{"role": "user", "content": ""}] for prompt in data["prompt"])
    # No task twice; every index is a real task of its environment.
    assert len(set(keys_of(data))) == 8
    assert all(0 <= index < MODULES[env].SPLITS["train"] for env, index in keys_of(data))
    # An environment left out of counts gets no task.
    assert envs_of(support_mix.build_dataset(counts={"helpdesk": 4})) == {"helpdesk": 4}
    # Without counts or weights, the mixture is every task of every environment.
    assert envs_of(support_mix.build_dataset()) == {"echo": 8, "helpdesk": 300}


def test_weights_split_num_tasks_in_proportion():
    assert envs_of(support_mix.build_dataset(weights={"echo": 1, "helpdesk": 3}, num_tasks=8)) == {
        "echo": 2,
        "helpdesk": 6,
    }
    # Remainders go to the largest fractions: 10 x (1/3, 2/3) = 3.33 + 6.67 -> 3 + 7.
    assert envs_of(support_mix.build_dataset(weights={"echo": 1, "helpdesk": 2}, num_tasks=10)) == {
        "echo": 3,
        "helpdesk": 7,
    }
    assert envs_of(support_mix.build_dataset(weights={"helpdesk": 1.0}, num_tasks=5)) == {"helpdesk": 5}


def test_same_seed_same_dataset_other_seed_other_order():
    counts = {"echo": 4, "helpdesk": 4}
    first = support_mix.build_dataset(counts=counts, seed=7)
    assert first.to_list() == support_mix.build_dataset(counts=counts, seed=7).to_list()
    others = [keys_of(support_mix.build_dataset(counts=counts, seed=seed)) for seed in (8, 9)]
    assert all(other != keys_of(first) for other in others)
    # The whole mixture, shuffled with two seeds: the same rows in another order.
    whole = [keys_of(support_mix.build_dataset(seed=seed)) for seed in (0, 1)]
    assert whole[0] != whole[1] and sorted(whole[0]) == sorted(whole[1])
    # Shuffled together, not one environment after the other.
    runs = [env for i, env in enumerate(first["environment"]) if i == 0 or env != first["environment"][i - 1]]
    assert len(runs) > 2


def test_task_fields_of_both_environments_coexist_in_prefixed_columns():
    data = support_mix.build_dataset(counts={"echo": 3, "helpdesk": 3}, seed=1)
    assert set(data["environment"]) == {"echo", "helpdesk"}
    echo_columns = {f"echo__{column.name}" for column in echo.SPEC.dataset.columns}
    helpdesk_columns = {f"helpdesk__{column.name}" for column in helpdesk.SPEC.dataset.columns}
    assert set(data.column_names) == {"environment", "prompt", "split", "task_index"} | echo_columns | helpdesk_columns
    for row in data:
        own = echo_columns if row["environment"] == "echo" else helpdesk_columns
        other = helpdesk_columns if row["environment"] == "echo" else echo_columns
        assert all(row[column] is None for column in other), row
        # The row's own fields are the task's fields, exactly as the member module builds them.
        member = MODULES[row["environment"]].build_dataset(indices=[row["task_index"]])[0]
        prefix = row["environment"] + "__"
        assert {column: row[column] for column in own} == {
            prefix + key: member[key] for key in member if prefix + key in own
        }
    # Types survive the mix: a nested object, a JSON-text field of varying type, a bool.
    helpdesk_row = next(row for row in data if row["environment"] == "helpdesk")
    assert isinstance(helpdesk_row["helpdesk__customer"]["tier"], str)
    assert isinstance(json.loads(helpdesk_row["helpdesk__sla_hours"]), (int, str))
    assert isinstance(next(row for row in data if row["environment"] == "echo")["echo__offers_hint"], bool)


def test_bad_requests_raise_dataset_error_naming_the_problem():
    with pytest.raises(DatasetError, match=r"unknown environments \['chess'\]; the mixture has \['echo', 'helpdesk'\]"):
        support_mix.build_dataset(counts={"echo": 1, "chess": 1})
    with pytest.raises(DatasetError, match=r"unknown environments \['chess'\]"):
        support_mix.build_dataset(weights={"chess": 1.0}, num_tasks=2)
    with pytest.raises(DatasetError, match=r"echo has 8 tasks in 'train', not 9"):
        support_mix.build_dataset(counts={"echo": 9})
    with pytest.raises(DatasetError, match=r"echo has 8 tasks in 'train', not 10"):
        support_mix.build_dataset(weights={"echo": 1, "helpdesk": 1}, num_tasks=20)
    with pytest.raises(DatasetError, match=r"not -1"):
        support_mix.build_dataset(counts={"helpdesk": -1})
    # helpdesk has a `test` split, echo has none.
    with pytest.raises(DatasetError, match=r"split 'test' is missing from \['echo'\]"):
        support_mix.build_dataset("test")
    with pytest.raises(DatasetError, match=r"split 'dev' is missing from \['echo', 'helpdesk'\]"):
        support_mix.build_dataset("dev")
    with pytest.raises(DatasetError, match="pass counts, or weights with num_tasks, not both"):
        support_mix.build_dataset(counts={"echo": 1}, weights={"echo": 1.0}, num_tasks=1)
    with pytest.raises(DatasetError, match="pass counts, or weights with num_tasks, not both"):
        support_mix.build_dataset(counts={"echo": 1}, num_tasks=1)
    with pytest.raises(DatasetError, match="weights need num_tasks"):
        support_mix.build_dataset(weights={"echo": 1.0})
    with pytest.raises(DatasetError, match="weights must be finite, non-negative and not all zero"):
        support_mix.build_dataset(weights={"echo": 0, "helpdesk": 0}, num_tasks=4)
    with pytest.raises(DatasetError, match="weights must be finite, non-negative and not all zero"):
        support_mix.build_dataset(weights={"echo": float("nan"), "helpdesk": 1.0}, num_tasks=4)


def test_the_mixture_module_routes_names_to_its_members():
    assert support_mix.environment_factory == {"echo": echo.EchoEnv, "helpdesk": helpdesk.HelpdeskEnv}
    assert support_mix.TOOLS == {"echo": echo.TOOLS, "helpdesk": helpdesk.TOOLS}
    assert support_mix.reward_funcs == echo.reward_funcs


# --------------------------------------------------------------------------------------
# One GRPO step on the mixture
# --------------------------------------------------------------------------------------


# Taught to every prompt, of either environment: one assistant turn that calls a tool of each
# environment, `echo` first. A rollout can run only the call that belongs to its environment.
BOTH_CALLS = (
    '<tool_call>\n{"name": "echo", "arguments": {"text": "hello"}}\n</tool_call>\n'
    '<tool_call>\n{"name": "list_policies", "arguments": {}}\n</tool_call>'
)
FINAL_ANSWER = "done"
SEED = 2  # draws echo tasks 0 ('hello': the taught call wins) and 7 ('done': it loses), and 2 helpdesk tickets


def tools_of(env_class):
    """The tools TRL takes from an adapter class: its public functions but `reset`."""
    return tool_methods(env_class)


@pytest.fixture(scope="module")
def mixture_model_path(tmp_path_factory):
    """The tiny Qwen3 of `tests/support/models/tiny_qwen3.py`, sized for helpdesk's prompts.

    Helpdesk's nine tool schemas render to ~3,400 tokens with the stock tiny tokenizer, past the
    model's 2,048 positions, and attention over that many tokens makes a CPU test slow. So the
    tokenizer is trained by the same builder on a corpus that adds the tools' schemas and the
    helpdesk policies (prompts of ~2,100 tokens), and the checkpoint declares 8,192 positions
    (RoPE has no learned positions; TRL drops tool results past `max_position_embeddings`).
    """
    from transformers.utils import get_json_schema

    from examples.helpdesk import POLICIES

    schemas = [
        json.dumps(get_json_schema(tool))
        for module in MODULES.values()
        for tool in tools_of(module.environment_factory)
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiny_model, "_CORPUS", [*tiny_model._CORPUS, *schemas, POLICIES])
        tokenizer = tiny_model.build_tokenizer(vocab_size=2048)
    tokenizer.model_max_length = 8192
    model = tiny_model.build_model(tokenizer)
    model.config.max_position_embeddings = 8192
    path = tmp_path_factory.mktemp("tiny-qwen3-mixture")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return str(path)


def teach_until_learned(model, examples, *, min_prob=0.8, max_steps=400, lr=5e-3, seed=0) -> tuple[int, float]:
    """Supervised steps until every completion token of every `(prompt_ids, completion_ids)` example
    is the model's top choice with probability >= `min_prob`; returns (steps, lowest probability).

    Unlike `tests.support.models.tiny_qwen3.teach`, the prompt is fixed context: each step encodes it without
    gradients into a KV cache and backpropagates through the completion tokens only. With prompts
    of ~2,000 tokens that is several times cheaper per step, and stopping on the criterion instead
    of after a fixed count keeps the test fast and its rollouts reliable on any platform: at
    temperature 0.1, a token at probability >= 0.8 (so every other one <= 0.2) is sampled with
    probability > 0.999999.
    """
    import torch
    from transformers import DynamicCache

    cache_kwarg = "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"
    torch.manual_seed(seed)
    was_training = model.training
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    lowest = 0.0
    for step in range(max_steps + 1):
        optimizer.zero_grad(set_to_none=True)
        lowest = 1.0
        for prompt, completion in examples:
            cache = DynamicCache()
            with torch.no_grad():
                model(input_ids=torch.tensor([prompt[:-1]]), use_cache=True, logits_to_keep=1, **{cache_kwarg: cache})
            logits = model(
                input_ids=torch.tensor([prompt[-1:] + completion[:-1]]), use_cache=True, **{cache_kwarg: cache}
            ).logits[0]
            target = torch.tensor(completion)
            probs = logits.detach().softmax(-1)
            right = probs.argmax(-1) == target
            lowest = min(lowest, float(torch.where(right, probs[torch.arange(len(target)), target], 0.0).min()))
            (torch.nn.functional.cross_entropy(logits, target) / len(examples)).backward()
        if lowest >= min_prob or step == max_steps:
            break
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    model.train(was_training)
    return step, lowest


def not_found(tool: str) -> str:
    """The tool message TRL writes for a call to a tool the rollout's environment lacks."""
    return str({"error": f"Tool {tool} not found."})


def teach_both_calls(trainer, rows, urls) -> tuple[int, float]:
    """Teach the trainer's model, on the token sequences TRL builds, to answer every row's real
    prompt (from its server, via its adapter, rendered with its environment's tools) with
    BOTH_CALLS; and on echo rows, after the two tool messages they will get, to say FINAL_ANSWER
    and stop. (Helpdesk rows get no second turn: `max_tool_calling_iterations=1` ends them anyway.)"""
    tokenizer = trainer.processing_class
    examples = []
    for row in rows:
        name = row["environment"]
        env = MODULES[name].environment_factory(base_url=urls[name])
        prompt = env.reset(**{key: value for key, value in row.items() if key != "environment"})
        prompt_ids = first_turn_ids(trainer, row, prompt, tools=trainer._env_tools[name])  # this environment's tools
        call_ids = answer_ids(tokenizer, BOTH_CALLS)
        examples.append((prompt_ids, call_ids))
        if name == "echo":
            results = [("echo", env.echo(text="hello")), ("list_policies", not_found("list_policies"))]
            suffix = trainer._get_tool_suffix_ids([{"role": "tool", "name": n, "content": c} for n, c in results])
            examples.append((prompt_ids + call_ids + suffix, answer_ids(tokenizer, FINAL_ANSWER)))
        del env  # closes its session
    return teach_until_learned(trainer.model, examples)


def tool_names_in(text: str) -> list[str]:
    """The names in the `<tools>` block of a prompt rendered with the Qwen3 template."""
    block = re.search(r"<tools>\n(.*)\n</tools>", text, re.S)
    assert block, text
    return [json.loads(line)["function"]["name"] for line in block.group(1).splitlines()]


@pytest.fixture
def recorders(echo_url, helpdesk_url):
    """The two `environment_factory` entries, recording every adapter TRL makes; afterwards, the
    sessions left open (a helpdesk rollout never finishes its ticket) are closed while the servers
    still run. The adapter has no public close, hence `_end_session`."""
    made = {
        "echo": Recorder(functools.partial(echo.EchoEnv, base_url=echo_url)),
        "helpdesk": Recorder(functools.partial(helpdesk.HelpdeskEnv, base_url=helpdesk_url)),
    }
    yield made
    for recorder in made.values():
        for env in recorder.created:
            env._episode.close()


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_grpo_step_on_the_mixture_routes_tools_per_environment(
    mixture_model_path, recorders, echo_url, helpdesk_url, tmp_path
):
    """One GRPO step of the tiny model on 2 echo and 2 helpdesk tasks, 2 generations each.

    Before training, supervised steps teach the model to answer *every* prompt with one turn that
    calls both `echo(text="hello")` and `list_policies()` (test_trl.py says why teaching keeps
    TRL's generation path real). So every rollout also tries the other environment's tool, and the
    test shows TRL resolving tools per rollout: each adapter receives only its own environment's
    call, and the foreign one fails inside TRL ("Tool echo not found.") without reaching any adapter.
    Sampling runs at temperature 0.1: this test is about routing, not exploration.
    """
    data = support_mix.build_dataset(counts={"echo": 2, "helpdesk": 2}, seed=SEED)
    assert sorted(row["echo__target"] for row in data if row["environment"] == "echo") == ["done", "hello"]
    trainer = grpo_trainer(
        tmp_path,
        model=mixture_model_path,
        environment_factory=recorders,
        train_dataset=data,
        reward_funcs=[*support_mix.reward_funcs, scoring_metrics],  # scoring_metrics: orlgen's metrics
        gradient_accumulation_steps=2,  # one generation batch: 4 tasks x 2 generations
        max_completion_length=512,  # room for the policies text, a long tool result
        max_tool_calling_iterations=1,  # one round of tool calls per rollout
        temperature=0.1,
    )
    # At init TRL probes one adapter per environment and keeps a tool list per environment.
    assert [len(recorder.created) for recorder in recorders.values()] == [1, 1]
    assert {name: sorted(tool.__name__ for tool in tools) for name, tools in trainer._env_tools.items()} == {
        name: sorted(module.TOOLS) for name, module in MODULES.items()
    }

    steps, lowest = teach_both_calls(trainer, list(data), {"echo": echo_url, "helpdesk": helpdesk_url})
    assert lowest >= 0.8, f"the tiny model did not learn the tool calls in {steps} steps (p={lowest:.3f})"

    # Observe (not replace) TRL's prompt rendering: the token ids each rollout's prompt became.
    rendered = []
    tokenize_prompts = trainer._tokenize_prompts

    def recording_tokenize_prompts(prompts):
        out = tokenize_prompts(prompts)
        rendered.extend(
            zip(list(trainer._batch_environments), [p[-1]["content"] for p in prompts], out[0], strict=True)
        )
        return out

    trainer._tokenize_prompts = recording_tokenize_prompts
    trainer.train()

    # Each rollout's prompt was rendered with its own environment's tools, and only those.
    assert Counter(name for name, _, _ in rendered) == {"echo": 4, "helpdesk": 4}
    for name, task_prompt, prompt_ids in rendered:
        text = trainer.processing_class.decode(prompt_ids)
        assert sorted(tool_names_in(text)) == sorted(MODULES[name].TOOLS), (name, text[:300])
        assert task_prompt.startswith("Support ticket" if name == "helpdesk" else "Call the echo tool")
        assert task_prompt in text

    # Each rollout of the batch could reach exactly its own adapter's methods.
    for environment, name, tool_dict in zip(
        trainer.environments, trainer._batch_environments, trainer._sync_tool_dicts, strict=True
    ):
        assert type(environment) is MODULES[name].environment_factory
        assert sorted(tool_dict) == sorted(MODULES[name].TOOLS)
        assert all(method.__self__ is environment for method in tool_dict.values())

    # 4 rollouts per environment, one adapter each: the probe plus 3 more from its own factory.
    echo_envs, helpdesk_envs = recorders["echo"].created, recorders["helpdesk"].created
    assert len(echo_envs) == 4 and all(type(env) is echo.EchoEnv for env in echo_envs)
    assert len(helpdesk_envs) == 4 and all(type(env) is helpdesk.HelpdeskEnv for env in helpdesk_envs)
    assert not hasattr(echo_envs[0], "list_policies") and not hasattr(helpdesk_envs[0], "echo")

    # Echo adapters: one call each, `echo`, scored by the echo server against the task's target.
    for env in echo_envs:
        assert env.outcome == "finished" and not env._episode.open and len(env.rewards) == 1, env
    assert sorted(env.reward for env in echo_envs) == [0.0, 0.0, 1.0, 1.0]
    assert sorted(env.last_output for env in echo_envs) == ["correct", "correct", "wrong: 'hello'", "wrong: 'hello'"]

    # Helpdesk adapters: one call each, `list_policies` (no reward; the ticket stays open).
    for env in helpdesk_envs:
        assert env.outcome == "running" and env.error is None and env.rewards == [None], env
        assert env.last_output.startswith("Shop policies (follow them exactly):")

    # Every rollout made 2 calls; the 8 to the other environment's tool failed inside TRL, and no
    # adapter saw them: each made exactly one call, none of them a mistake.
    metrics = trainer.state.log_history[0]
    assert metrics["tools/call_frequency"] == pytest.approx(2.0)
    assert metrics["tools/failure_frequency"] == pytest.approx(0.5)
    assert all(env.tool_calls == 1 and env.tool_errors == 0 for env in echo_envs + helpdesk_envs)
    assert metrics["orlgen/tool_calls_mean"] == 1.0 and metrics["orlgen/tool_errors"] == 0.0
    tool_messages = Counter(
        (message["name"], message["content"])
        for completion in trainer._logs["completion"]
        for message in completion
        if message["role"] == "tool"
    )
    assert tool_messages[("list_policies", not_found("list_policies"))] == 4
    assert tool_messages[("echo", not_found("echo"))] == 4
    # Each class scores its own rollouts through get_reward, one column per class, as TRL logs them.
    # Only echo rollouts are scored (a helpdesk rollout ends before submit_resolution): 2 of 4 won.
    assert metrics["rewards/EchoEnv/mean"] == pytest.approx(0.5) and metrics["reward"] == pytest.approx(0.5)
    assert metrics["rewards/HelpdeskEnv/mean"] is None  # no helpdesk rollout was scored
    assert all(not env._episode.open for env in helpdesk_envs)  # get_reward ended the open tickets' sessions
    assert metrics["orlgen/scored_fraction"] == 0.5 and metrics["orlgen/unfinished"] == 4.0
    assert metrics["orlgen/env_errors"] == 0.0


def test_draw_is_independent_of_dict_order_and_num_tasks_alone_splits_evenly():
    a = support_mix.build_dataset(counts={"echo": 2, "helpdesk": 3}, seed=5)
    b = support_mix.build_dataset(counts={"helpdesk": 3, "echo": 2}, seed=5)
    assert a.to_list() == b.to_list()
    even = Counter(support_mix.build_dataset(num_tasks=10, seed=1)["environment"])
    assert even == {"echo": 5, "helpdesk": 5}


def test_only_contributing_environments_need_the_split():
    rows = support_mix.build_dataset("test", counts={"helpdesk": 2})  # echo has no test split
    assert rows["environment"] == ["helpdesk", "helpdesk"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"counts": {"echo": 1.9}}, "whole numbers"), ({"counts": {"echo": 0}}, "would be empty")],
)
def test_counts_are_checked(kwargs, message):
    with pytest.raises(DatasetError, match=message):
        support_mix.build_dataset(**kwargs)
