"""`orlgen eval`: a model scored on an environment through its generated module.

Everything is real and on loopback: ORS servers of the example envs (`ServerProcess`), an
OpenAI-compatible chat-completions server written with starlette (`bench/chat_server.py`)
serving a scripted policy that answers in `tool_calls` (`tests/support/models/scripted_policy.py`), and the tiny
Qwen3 checkpoint generated in-process through TRL's own template and tool-call parser
(`--hf-model`). The only fakes are fault
injections that say so: an env that fails on some tasks (`tests/support/envs/flaky.py`) and a chat server
that answers HTTP 400 to one task.
"""

from __future__ import annotations

import json
import math
import signal
import socket
import time
from pathlib import Path

import pytest
from orlgen.eval.stats import default_threshold, equal_groups, mean_stderr, pass_at_k
from orlgen.serve import ServerProcess

from bench.chat_server import ChatServer, Refuse, answer, call, serving
from tests.support.cli import invoke, start_orlgen
from tests.support.models.scripted_policy import scripted
from tests.support.modules import REPO, generated


@pytest.fixture(scope="module")
def chat():
    with serving(ChatServer(scripted)) as server:
        yield server


def evaluate(*args, env: dict[str, str] | None = None):
    return invoke("eval", *args, env=env)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- statistics, against values computed by hand ----------------------------------------------


def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(4, 1, 1) == 0.25
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)  # 1 - C(3,3)/C(5,3)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert (pass_at_k(4, 0, 4), pass_at_k(4, 1, 4), pass_at_k(4, 4, 1)) == (0.0, 1.0, 1.0)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_mean_stderr_and_equal_groups():
    mean, stderr = mean_stderr([1.0, 0.0, 1.0, 0.0])
    assert mean == 0.5 and stderr == pytest.approx(math.sqrt(1 / 3) / 2)  # sample sd 0.577, / sqrt(4)
    assert mean_stderr([0.3]) == (0.3, None) and mean_stderr([]) == (None, None)
    # All equal: [1, 1]; one scored value: [None, 1]; nothing scored: [None, None]. Not: [0, 1].
    assert equal_groups([[1.0, 1.0], [0.0, 1.0], [None, 1.0], [None, None]]) == (3, 4)
    assert default_threshold([0.2, None, 0.5]) == 1.0 and default_threshold([3.0, 7.5]) == 7.5


# --- end to end through the CLI ---------------------------------------------------------------


@pytest.mark.slow
def test_helpdesk_table_and_trajectories_in_one_run(chat, helpdesk_url, helpdesk_module, tmp_path):
    from datasets import load_dataset
    from transformers.utils import get_json_schema

    out = tmp_path / "helpdesk.jsonl"
    before = len(chat.requests)
    result = evaluate(
        "generated/helpdesk.py", "--base-url", chat.url, "--model", "scripted", "-n", 3, "-k", 4,
        "--env-url", helpdesk_url, "--out", out, "--seed", 3,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # no progress bar when stderr is no terminal
    table = result.stdout
    for column in ("tasks", "rollouts", "mean reward", "pass@1", "pass@4", "scored", "tool calls / rollout",
                   "tool-error rate", "mean turns", "wall time", "equal-reward groups"):  # fmt: skip
        assert f"  {column} " in table
    assert "helpdesk / test" in table and "12 (4 per task)" in table

    written = rows(out)
    assert len(written) == 12 and {(r["task_index"], r["sample"]) for r in written} == {
        (t, s) for t in range(3) for s in range(4)
    }
    assert {r["split"] for r in written} == {"test"} and all(r["outcome"] == "finished" for r in written)
    rewards = [r["reward"] for r in written]
    assert all(0.0 <= reward <= 1.0 for reward in rewards) and len(set(rewards)) > 1  # the slips show
    first = written[0]
    assert [m["role"] for m in first["messages"]][:2] == ["user", "assistant"]
    assert first["messages"][-1]["role"] == "tool" and first["stop"] == "episode_over"
    assert first["rewards"][-1] == first["reward"] and set(first["timings"]) >= {"reset_s", "model_s", "tools_s"}

    # The model was shown exactly what TRL shows it: get_json_schema of the class's public methods.
    env = helpdesk_module.HelpdeskEnv(base_url=helpdesk_url)
    methods = [getattr(env, name) for name in sorted(helpdesk_module.TOOLS)]
    assert chat.requests[before]["tools"] == [get_json_schema(method) for method in methods]
    assert json.loads(first["tools"]) == chat.requests[before]["tools"]

    loaded = load_dataset("json", data_files=str(out))["train"]
    assert loaded.num_rows == 12 and loaded[0]["messages"][1]["tool_calls"][0]["function"]["name"]


@pytest.mark.slow
def test_json_format_and_pass_threshold(chat, helpdesk_url):
    result = evaluate(
        "generated.helpdesk", "--base-url", chat.url, "--model", "scripted", "-n", 3, "-k", 2,
        "--env-url", helpdesk_url, "--format", "json", "--pass-threshold", 0.5, "--split", "train",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (split,) = report["splits"]
    assert (split["env"], split["split"], split["tasks"], split["rollouts"], split["threshold"]) == (
        "helpdesk", "train", 3, 6, 0.5
    )  # fmt: skip
    assert split["scored"] == 6 and split["unscored"] == {} and 0 <= split["equal_group_share"] <= 1
    assert report["rollouts"] == 6 and report["interrupted"] is False and report["rollouts_per_s"] > 0


@pytest.mark.slow
def test_a_snapshot_is_rendered_in_memory_and_evaluated(chat, echo_url, tmp_path):
    snapshot = tmp_path / "echo.snapshot.json"
    snapshot.write_bytes((REPO / "generated" / "echo.snapshot.json").read_bytes())
    (tmp_path / "echo.tasks.jsonl").write_bytes((REPO / "generated" / "echo.tasks.jsonl").read_bytes())
    result = evaluate(
        snapshot, "--base-url", chat.url, "--model", "scripted", "-n", 4, "--env-url", echo_url, "--format", "json"
    )
    assert result.exit_code == 0, result.output
    (split,) = json.loads(result.stdout)["splits"]
    assert (split["env"], split["rollouts"], split["mean_reward"], split["pass_at_1"]) == ("echo", 4, 1.0, 1.0)
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "echo.snapshot.json",
        "echo.tasks.jsonl",
    ]  # nothing written


def test_a_mixture_reports_each_environment(chat, echo_url, helpdesk_url, tmp_path):
    urls = {"ORLGEN_ECHO_URL": echo_url, "ORLGEN_HELPDESK_URL": helpdesk_url}
    both = evaluate(
        "generated/support_mix.py", "--base-url", chat.url, "--model", "scripted", "-n", 2, "-k", 2,
        "--split", "train", "--format", "json", env=urls,
    )  # fmt: skip
    assert both.exit_code == 0, both.output
    report = json.loads(both.stdout)["splits"]
    assert [(s["env"], s["rollouts"]) for s in report] == [("echo", 4), ("helpdesk", 4)]
    assert report[0]["mean_reward"] == 1.0
    only = evaluate(
        "generated/support_mix.py", "--base-url", chat.url, "--model", "scripted", "-n", 1, "--split", "train",
        "--env", "echo", "--format", "json", env=urls,
    )  # fmt: skip
    assert [s["env"] for s in json.loads(only.stdout)["splits"]] == ["echo"]


@pytest.mark.slow
def test_a_terminal_tool_grades_the_final_message(chat, tmp_path):
    quiz = generated("examples.quiz:Quiz", tmp_path)
    out = tmp_path / "quiz.jsonl"
    with ServerProcess("examples.quiz:Quiz") as server:
        result = evaluate(
            Path(quiz.__file__), "--base-url", chat.url, "--model", "scripted", "-k", 3, "--env-url", server.url,
            "--out", out, "--format", "json",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    (split,) = json.loads(result.stdout)["splits"]
    assert (split["tasks"], split["rollouts"], split["scored"]) == (4, 12, 12)
    for row in rows(out):
        final = row["messages"][-1]
        assert final["role"] == "assistant" and row["stop"] == "answered"
        # The terminal tool graded the plain final answer: 1.0 exactly when it was right.
        assert row["reward"] == (1.0 if final["content"].startswith("The answer is") else 0.0)
        assert row["rewards"] == [None, row["reward"]]  # lookup paid nothing; submit graded


@pytest.mark.slow
def test_failing_tasks_are_counted_unscored_and_the_run_completes(chat, tmp_path, monkeypatch):
    flaky = generated("tests.support.envs.flaky:Flaky", tmp_path)
    out = tmp_path / "flaky.jsonl"
    monkeypatch.setenv("ORLGEN_FLAKY", "1")
    with ServerProcess("tests.support.envs.flaky:Flaky") as server:
        result = evaluate(
            tmp_path / "flaky.snapshot.json", "--base-url", chat.url, "--model", "scripted", "-k", 2,
            "--env-url", server.url, "--out", out,
        )  # fmt: skip
    assert flaky.TOOLS == ("step",)
    assert result.exit_code == 0, result.output
    assert "  scored                4 / 8 (unscored 4: env_error 4)" in result.stdout  # tasks 1 and 2 fail
    by_task = {}
    for row in rows(out):
        by_task.setdefault(row["task_index"], set()).add((row["outcome"], row["reward"]))
    assert by_task[0] == by_task[3] == {("finished", 1.0)}
    assert by_task[1] == by_task[2] == {("env_error", None)}
    failed = [row for row in rows(out) if row["task_index"] == 1]
    assert "could not start task train[1]" in failed[0]["reason"] and failed[0]["turns"] == 0


def test_a_failing_model_turn_is_recorded_and_never_aborts(echo_url, tmp_path):
    def refuse_task_two(body):  # fault injection: the endpoint answers 400 to one task's prompt
        if "'open reward'" in body["messages"][0]["content"]:
            raise Refuse(400)
        return scripted(body)

    out = tmp_path / "echo.jsonl"
    with serving(ChatServer(refuse_task_two)) as server:
        result = evaluate(
            "generated/echo.py", "--base-url", server.url, "--model", "m", "-n", 4, "--env-url", echo_url,
            "--out", out, "--format", "json",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    (split,) = json.loads(result.stdout)["splits"]
    assert (split["scored"], split["unscored"]) == (3, {"policy_error": 1})
    (failed,) = [row for row in rows(out) if row["outcome"] == "policy_error"]
    assert failed["task_index"] == 2 and "HTTP 400" in failed["reason"] and failed["reward"] is None


def test_tool_errors_are_answered_as_trl_answers_them(echo_url, tmp_path):
    def clumsy(body):
        turn = sum(message["role"] == "assistant" for message in body["messages"])
        script = [call("shout", {"text": "x"}, 0), call("echo", "{not json", 1), call("echo", {"txt": "x"}, 2)]
        return script[turn] if turn < len(script) else answer("giving up")

    out = tmp_path / "clumsy.jsonl"
    with serving(ChatServer(clumsy)) as server:
        result = evaluate(
            "generated/echo.py", "--base-url", server.url, "--model", "m", "-n", 1, "--env-url", echo_url,
            "--out", out, "--format", "json",
        )  # fmt: skip
    (split,) = json.loads(result.stdout)["splits"]
    assert (split["tool_calls_per_rollout"], split["tool_error_rate"], split["mean_turns"]) == (3.0, 1.0, 4.0)
    assert split["unscored"] == {"unfinished": 1}
    results = [m["content"] for m in rows(out)[0]["messages"] if m["role"] == "tool"]
    assert results[0] == "{'error': 'Tool shout not found.'}"
    assert results[1].startswith("{'error': 'arguments of echo are not a JSON object")
    assert results[2].startswith("Error: invalid arguments for echo")  # the adapter's own answer


@pytest.mark.slow
def test_preflight_names_a_dead_env_url_in_one_line(echo_module, echo_url):
    """`preflight` asks the runtime (`check_reachable`), not the adapter's private connection."""
    from orlgen.eval.errors import Unreachable
    from orlgen.eval.run import preflight
    from orlgen.eval.subject import load
    from orlgen.runtime.trl.adapter import check_reachable

    (member,) = load(str(REPO / "generated" / "echo.py"))
    preflight([member], echo_url)  # a live env passes
    dead = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(Unreachable) as raised:
        preflight([member], dead)
    message = str(raised.value)
    assert message.startswith(f"environment echo at Connection({dead!r}") and "cannot be reached:" in message
    assert "\n" not in message
    with pytest.raises(ConnectionError, match=r"^Connection\(.*cannot be reached: "):
        check_reachable(echo_module.EchoEnv(base_url=dead), 5.0)


@pytest.mark.slow
def test_unreachable_endpoint_or_env_exits_2_with_one_line(chat, echo_url):
    dead = f"http://127.0.0.1:{closed_port()}"
    no_model = evaluate("generated/echo.py", "--base-url", dead + "/v1", "--model", "m", "--env-url", echo_url)
    no_env = evaluate("generated/echo.py", "--base-url", chat.url, "--model", "m", "--env-url", dead)
    for result, what in ((no_model, "model endpoint"), (no_env, "environment echo")):
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"orlgen: error: {what}")
    model = ["--base-url", chat.url, "--model", "m", "--env-url", echo_url]
    for args, message in (
        (["generated/echo.py", "--env-url", echo_url], "a model is needed"),
        (["generated/nothing.py", *model], "generated/nothing.py: no such file"),
        (["orlgen.cli", *model], "orlgen.cli is not a module generated by orlgen"),
        (["generated/support_mix.py", "--env", "wordgrid", *model], "has no environment 'wordgrid'"),
        (["generated/echo.py", "--split", "dev", *model], "echo has no split 'dev' (it has train)"),
    ):
        usage = evaluate(*args)
        assert usage.exit_code == 2 and message in usage.stderr and usage.stderr.count("\n") == 1, usage.stderr


@pytest.mark.slow
def test_ctrl_c_keeps_what_finished_and_exits_130(echo_url, tmp_path):
    out = tmp_path / "partial.jsonl"
    with serving(ChatServer(scripted, delay=0.4)) as server:
        child = start_orlgen(
            "eval", "generated/echo.py", "--base-url", server.url, "--model", "m", "-k", "8",
            "--concurrency", "2", "--env-url", echo_url, "--out", out,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not (out.exists() and len(out.read_text().splitlines()) >= 2):
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=30)
    assert child.returncode == 130, stderr
    kept = rows(out)
    assert 2 <= len(kept) < 64 and all(row["reward"] == 1.0 for row in kept)
    assert stdout.startswith("echo / test") or stdout.startswith("echo / train")
    # (Rollouts in flight are abandoned: the SDK may log a failed keep-alive ping of theirs at exit.)
    assert "interrupted:" in stdout and stderr.splitlines()[0] == "orlgen: interrupted", stderr


# --- a local checkpoint, and training on what eval wrote --------------------------------------

ECHO_HELLO_CALL = '<tool_call>\n{"name": "echo", "arguments": {"text": "hello"}}\n</tool_call>'


@pytest.fixture(scope="module")
def taught_model(tmp_path_factory, echo_module, echo_url):
    """The tiny Qwen3, taught (a few seconds of supervised steps) to answer an echo prompt with
    `echo(text="hello")`: a random model almost never writes a parseable tool call. The prompt
    tokens are the ones TRL renders for the first turn."""
    import torch
    from orlgen.runtime.trl.rollout import trl_prompt
    from orlgen.runtime.trl.tools import tool_methods

    from tests.support.models.tiny_qwen3 import EOS_TOKEN, build_model, build_tokenizer, teach

    tokenizer = build_tokenizer()
    model = build_model(tokenizer)
    examples = []
    for row in echo_module.build_dataset("train", num_tasks=2):
        env = echo_module.EchoEnv(base_url=echo_url)
        prompt_ids = tokenizer.apply_chat_template(
            trl_prompt(row, env.reset(**row)),
            tools=tool_methods(env),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
        )["input_ids"]
        env.get_reward()
        completion = tokenizer(ECHO_HELLO_CALL, add_special_tokens=False)["input_ids"]
        examples.append((prompt_ids, [*completion, tokenizer.convert_tokens_to_ids(EOS_TOKEN)]))
    torch.set_num_threads(1)
    teach(model, examples, steps=120)
    path = tmp_path_factory.mktemp("taught")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.mark.slow
def test_hf_model_is_read_through_trls_parser(taught_model, echo_url, tmp_path):
    out = tmp_path / "hf.jsonl"
    result = evaluate(
        "generated/echo.py", "--hf-model", taught_model, "-n", 2, "--split", "train", "--temperature", 0,
        "--max-tokens", 40, "--env-url", echo_url, "--out", out, "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    by_task = {row["task_index"]: row for row in rows(out)}
    for index, reward in ((0, 1.0), (1, 0.0)):  # task 0's target is "hello"; task 1's is "orlgen"
        row = by_task[index]
        (call_,) = row["messages"][1]["tool_calls"]
        assert call_["function"] == {"name": "echo", "arguments": '{"text": "hello"}'}
        assert (row["reward"], row["stop"], row["model"]) == (reward, "episode_over", str(taught_model))


@pytest.mark.slow
def test_an_eval_file_trains_one_sft_step(chat, echo_url, tmp_path):
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    from tests.support.models.tiny_qwen3 import tiny_qwen3_dir

    out = tmp_path / "sft.jsonl"
    evaluate("generated/echo.py", "--base-url", chat.url, "--model", "m", "-n", 2, "--env-url", echo_url, "--out", out)
    dataset = load_dataset("json", data_files=str(out))["train"]
    args = SFTConfig(
        output_dir=str(tmp_path / "sft"), max_steps=1, per_device_train_batch_size=2, use_cpu=True, bf16=False,
        report_to=[], logging_steps=1, save_strategy="no", max_length=512, disable_tqdm=True,
        activation_checkpointing=False,
    )  # fmt: skip
    trainer = SFTTrainer(model=str(tiny_qwen3_dir()), args=args, train_dataset=dataset)
    trainer.train()
    logged = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logged) == 1 and math.isfinite(logged[0]["loss"])
    # The tool call and its answer were in what it trained on.
    text = trainer.processing_class.decode(trainer.train_dataset[0]["input_ids"])
    assert '<tool_call>\n{"name": "echo", "arguments": {"text":' in text and "<tool_response>" in text


@pytest.mark.slow
def test_hf_turns_see_the_tokens_grpo_trainer_builds(taught_model, echo_module, echo_url, tmp_path, monkeypatch):
    """Turn by turn, the local model is given exactly the token ids GRPOTrainer would give it:
    the first turn rendered as `_tokenize_prompts` renders it, the next one the previous ids plus
    the model's own completion plus `_get_tool_suffix_ids` of the tool result (re-rendering the
    history would differ: Qwen3's training template adds an empty think block to past turns)."""
    from orlgen.eval.hf import LocalModel
    from orlgen.runtime.trl.rollout import trl_prompt
    from orlgen.runtime.trl.tools import tool_methods

    from tests.support.training import make_trainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    dataset = echo_module.build_dataset(num_tasks=1)
    trainer, _ = make_trainer(str(taught_model), echo_module, echo_url, dataset, tmp_path)
    env = echo_module.EchoEnv(base_url=echo_url)
    prompt = trl_prompt(dataset[0], env.reset(**dataset[0]))
    chat = LocalModel(str(taught_model), max_tokens=40).start()

    reply = chat.turn(prompt, tool_methods(env), seed=0, temperature=0)
    trainer._batch_environments = [None]  # set per batch by _generate_and_score_completions (trl 1.16)
    (first,), _, _ = trainer._tokenize_prompts([prompt])
    assert chat.ids[: len(first)] == list(first)
    assert reply["tool_calls"][0]["function"] == {"name": "echo", "arguments": {"text": "hello"}}

    completion = chat.ids[len(first) :]
    tool_message = {"role": "tool", "name": "echo", "content": env.echo(text="hello")}
    chat.turn([*prompt, reply, tool_message], tool_methods(env), seed=1, temperature=0)
    second = list(first) + completion + trainer._get_tool_suffix_ids([tool_message])
    assert chat.ids[: len(second)] == second
