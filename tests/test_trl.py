"""End to end with TRL: a real `GRPOTrainer` drives generated adapters against real ORS servers.

The model is the tiny random Qwen3 of `tests/support/models/tiny_qwen3.py` (built offline, TRL's own Qwen3 chat
template, so TRL parses its tool calls). Nothing is mocked: the trainer discovers the tools on the
generated class, renders them through the chat template, parses the model's tool calls, calls the
adapter's methods, which open sessions on the echo server, and scores the rollouts through the
adapter's own `get_reward()` (TRL's env-owned reward), alone or next to explicit reward functions.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.support.models.tiny_qwen3 import qwen3_chat_template, teach
from tests.support.training import answer_ids, first_turn_ids, make_trainer

pytestmark = pytest.mark.usefixtures("quiet_and_single_threaded")

# The call the tiny model is taught to make, exactly as a Qwen3 model writes one.
ECHO_HELLO_CALL = '<tool_call>\n{"name": "echo", "arguments": {"text": "hello"}}\n</tool_call>'
FINAL_ANSWER = "done"


def rendered_tools(trainer, messages):
    """Render `messages` with the trainer's tools through its chat template; return the tool schemas shown."""
    text = trainer.processing_class.apply_chat_template(
        messages, tools=trainer.tools, chat_template=trainer.chat_template, add_generation_prompt=True, tokenize=False
    )
    block = re.search(r"<tools>\n(.*)\n</tools>", text, re.S)
    assert block, text
    return [json.loads(line) for line in block.group(1).splitlines()]


@pytest.mark.parametrize("name", ["echo", "helpdesk"])
def test_trainer_discovers_exactly_the_generated_tools(name, request, tiny_model_path, tmp_path):
    """At init TRL builds one adapter, lists the public functions of its class, and renders their
    schemas (from the typed signatures and docstrings) through the Qwen3 chat template."""
    from transformers.utils import get_json_schema

    module = request.getfixturevalue(f"{name}_module")
    url = request.getfixturevalue(f"{name}_url")
    trainer, factory = make_trainer(tiny_model_path, module, url, module.build_dataset(num_tasks=4), tmp_path)

    assert trainer.processing_class.chat_template == qwen3_chat_template()
    assert sorted(tool.__name__ for tool in trainer.tools) == sorted(module.TOOLS)
    assert len(factory.created) == 1  # the probe instance, which opened no session
    assert not factory.created[0]._episode.open and factory.created[0].outcome == "running"

    schemas = rendered_tools(trainer, [{"role": "user", "content": "hi"}])
    assert [schema["function"]["name"] for schema in schemas] == [tool.__name__ for tool in trainer.tools]
    assert schemas == [json.loads(json.dumps(get_json_schema(tool))) for tool in trainer.tools]
    # The plain Qwen3 template (what the model ships with) renders them too.
    text = trainer.processing_class.apply_chat_template(
        [{"role": "user", "content": "hi"}], tools=trainer.tools, add_generation_prompt=True, tokenize=False
    )
    assert all(f'"name": "{tool}"' in text for tool in module.TOOLS)


def teach_echo_hello(trainer, module, base_url, rows) -> float:
    """Supervised steps on the trainer's model: for each row's real prompt (from the server, via the
    adapter), emit ECHO_HELLO_CALL; after the tool's answer, say FINAL_ANSWER and stop."""
    tokenizer = trainer.processing_class
    examples = []
    for row in rows:
        env = module.EchoEnv(base_url=base_url)
        prompt = env.reset(**row)
        answer = env.echo(text="hello")  # what the server will answer to the taught call
        assert not env._episode.open
        prompt_ids = first_turn_ids(trainer, row, prompt)
        call_ids = answer_ids(tokenizer, ECHO_HELLO_CALL)
        examples.append((prompt_ids, call_ids))
        # The second turn: TRL appends the tool message's tokens to prompt + completion (with this
        # private helper of trl 1.16; the test needs the exact tokens, not an approximation).
        suffix = trainer._get_tool_suffix_ids([{"role": "tool", "name": "echo", "content": answer}])
        examples.append((prompt_ids + call_ids + suffix, answer_ids(tokenizer, FINAL_ANSWER)))
    return teach(trainer.model, examples)


@pytest.mark.slow
@pytest.mark.parametrize("explicit", [False, True], ids=["get_reward", "get_reward+reward_funcs"])
def test_grpo_training_runs_tool_calls_through_the_generated_adapter(
    explicit, echo_module, echo_url, tiny_model_path, tmp_path
):
    """One GRPO step of the tiny model on two echo tasks ('hello' and 'orlgen'), 2 generations each.

    Making the tool calls happen: a random model almost never writes a parseable tool call, so before
    `train()` a few seconds of supervised steps (a plain torch loop on the trainer's own model, on the
    exact token sequences TRL builds) teach it to answer every echo prompt with
    `echo(text="hello")` and, after the tool's reply, to say "done". We chose teaching over scripted
    completions because it keeps TRL's whole generation path real: sampling, response parsing with
    the Qwen3 response template, argument typing from the tool schema, the tool loop and its token
    bookkeeping. Always answering "hello" wins task 0 and loses task 1, so the logged mean reward
    (0.5) can only come from the server's verdicts. Sampling runs at temperature 0.5: after ~80
    steps the taught call has probability ~0.86 at temperature 1 and ~0.9999 at 0.5, so every
    rollout makes it whatever the platform's random stream.

    Scoring: with the module's `reward_funcs` (empty) TRL scores through `EchoEnv.get_reward()`,
    logged as the `EchoEnv` column. With `outcome_reward` and `summed_reward` passed as well
    (`explicit`), the first of them owns each rollout and the others give None: the total stays
    0.5, where counting every scorer would give 1.5.
    """
    from orlgen.runtime import scoring_metrics

    rows = echo_module.build_dataset(indices=[0, 1])
    # orlgen's reward functions log its metrics; with get_reward scoring, scoring_metrics does (an empty column).
    funcs = [echo_module.outcome_reward, echo_module.summed_reward] if explicit else [scoring_metrics]
    trainer, factory = make_trainer(
        tiny_model_path, echo_module, echo_url, rows, tmp_path, reward_funcs=funcs, temperature=0.5
    )

    loss = teach_echo_hello(trainer, echo_module, echo_url, list(rows))
    assert loss < 0.05, f"the tiny model did not learn the tool call (loss {loss:.3f})"

    trainer.train()

    # 4 rollouts (2 tasks x 2 generations), one adapter each: the probe plus 3 more from the pool.
    assert len(factory.created) == 4
    for env in factory.created:
        assert env.outcome == "finished", env  # the echo call reached the server and ended the episode
        assert not env._episode.open and not env._episode.open  # no session left open
        assert len(env.rewards) == 1  # exactly one call went through
    played = sorted(factory.created, key=lambda env: env.reward)
    assert [env.reward for env in played] == [0.0, 0.0, 1.0, 1.0]
    assert sorted(env.last_output for env in played) == ["correct", "correct", "wrong: 'hello'", "wrong: 'hello'"]

    metrics = trainer.state.log_history[0]
    assert metrics["reward"] == pytest.approx(0.5)
    if explicit:
        assert metrics["rewards/outcome_reward/mean"] == pytest.approx(0.5)
        assert metrics["rewards/summed_reward/mean"] is None and metrics["rewards/EchoEnv/mean"] is None  # no value
    else:
        assert metrics["rewards/EchoEnv/mean"] == pytest.approx(0.5)
        assert metrics["rewards/scoring_metrics/mean"] is None  # it scores nothing
        assert not any(
            key.startswith("rewards/") and key.split("/")[1] not in ("EchoEnv", "scoring_metrics") for key in metrics
        )
    assert metrics["tools/call_frequency"] == pytest.approx(1.0)  # one tool call per rollout
    assert metrics["tools/failure_frequency"] == 0.0
    # The scoring coverage, logged with TRL's metrics through the log_metric of orlgen's reward functions.
    assert metrics["orlgen/scored_fraction"] == 1.0 and metrics["orlgen/tool_calls_mean"] == 1.0
    assert metrics["orlgen/env_errors"] == metrics["orlgen/unfinished"] == metrics["orlgen/tool_errors"] == 0.0
