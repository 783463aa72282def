"""Training rollouts uploaded to OpenReward's rollout API (`orlgen.runtime.trl.upload`, over
`orlgen.runtime.ors.uploader`).

A real `GRPOTrainer` step of the tiny Qwen3 against the real helpdesk server; the rollout API is a
loopback stand-in (starlette) that records every request and answers 200, a chosen status, or
nothing until the test releases it (fault injection, said so where used). Counts, not clocks:
a stalled API is shown not to block the step by the step completing with the uploads still
pending, and by the dropped count the queue's bound gives.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
from contextlib import contextmanager

import pytest
from orlgen.runtime.agent.loop import Trajectory
from orlgen.runtime.ors.rollouts import MAX_BATCH_ITEMS, Target
from orlgen.runtime.ors.uploader import RolloutUploader, UploadStats
from orlgen.runtime.trl.upload import RolloutUpload

from bench.chat_server import serving
from tests.support.models.tiny_qwen3 import teach
from tests.support.training import Recorder, answer_ids, first_turn_ids, grpo_trainer
from tests.support.waiting import wait_for

KEY = "orlgen-test-key-4a7be019"
SECRET = "shop-token-5d2e91c7"
# The call the tiny model is taught to make (test_trl.py's): it ends the episode and the server grades it.
ECHO_HELLO_CALL = '<tool_call>\n{"name": "echo", "arguments": {"text": "hello"}}\n</tool_call>'


class RolloutAPI:
    """A loopback stand-in for `POST /v1/rollouts`: records (headers, body) of each request and
    answers `statuses` in turn, then `status`; with `stall` (fault injection) it answers nothing
    until `release` is set."""

    def __init__(self, status: int = 200, stall: bool = False, statuses: tuple[int, ...] = ()) -> None:
        self.status = status
        self.statuses = list(statuses)
        self.release = threading.Event()
        if not stall:
            self.release.set()
        self.requests: list[tuple[dict[str, str], dict]] = []
        self.url = ""

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def rollouts(request):
            self.requests.append((dict(request.headers), await request.json()))
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            status = self.statuses.pop(0) if self.statuses else self.status
            return JSONResponse({"detail": "said by the stand-in"}, status_code=status)

        return Starlette(routes=[Route("/v1/rollouts", rollouts, methods=["POST"])])

    @property
    def target(self) -> Target:
        return Target(self.url.removesuffix("/v1"), KEY)

    def events(self) -> list[dict]:
        return [event for _, body in self.requests for event in body["events"]]


def orlgen_lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "orlgen"]


def rows_with_a_secret(module):
    """Tasks 0 and 1, each prompt carrying a secret value from outside the environment (the row),
    which only the uploader's masking keeps off the platform."""
    return module.build_dataset(indices=[0, 1]).map(
        lambda row: {"prompt": [{"role": "user", "content": f"(account token {SECRET}) "}]}
    )


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_a_grpo_step_uploads_each_rollout_as_the_trainer_saw_it(
    echo_module, echo_url, tiny_model_path, tmp_path, caplog
):
    """One GRPO step on the echo tasks 0 ('hello' wins) and 1 ('orlgen' wins), 2 generations each.
    The tiny model is taught to call `echo(text="hello")` (supervised steps on the exact tokens TRL
    renders, as in test_trl.py), so every rollout has a tool call, the server's verdict and a
    reward. Echo rather than helpdesk here: helpdesk's eight tool schemas make a first turn that
    took over 300 s to teach on a shared 2-core machine; the stalled-API test below trains on
    helpdesk, untaught. The trainer evaluates after its step (`eval_strategy`, the same rows):
    those rollouts call the reward functions too, and are not uploaded."""
    make_env = functools.partial(echo_module.EchoEnv, base_url=echo_url, secrets={"SHOP_TOKEN": SECRET})
    factory = Recorder(make_env)
    rows = rows_with_a_secret(echo_module)
    api = RolloutAPI()
    with serving(api):
        upload = RolloutUpload("echo-grpo", target=api.target, model="tiny-qwen3", flush_timeout=60)
        trainer = grpo_trainer(
            tmp_path, model=tiny_model_path, environment_factory=factory, train_dataset=rows, temperature=0.5,
            reward_funcs=[*echo_module.reward_funcs, upload.reward_func], eval_dataset=rows, eval_strategy="steps",
            eval_steps=1, per_device_eval_batch_size=4,
        )  # fmt: skip
        examples = []
        for row in rows:
            env = make_env()
            prompt_ids = first_turn_ids(trainer, row, env.reset(**row))
            env.get_reward()
            examples.append((prompt_ids, answer_ids(trainer.processing_class, ECHO_HELLO_CALL)))
        assert teach(trainer.model, examples) < 0.05
        trainer.add_callback(upload.callback(trainer))
        with caplog.at_level(logging.INFO, logger="orlgen"):
            trainer.train()

    evaluated = [entry for entry in trainer.state.log_history if "eval_reward" in entry]
    assert len(evaluated) == 1, trainer.state.log_history  # 4 rollouts trained on, then 4 evaluated
    assert upload.final == UploadStats(recorded=4, sent=4)
    assert (
        orlgen_lines(caplog).count(
            "rollout upload: the trainer's evaluation rollouts are not uploaded, only training's"
        )
        == 1
    )
    assert {headers["x-api-key"] for headers, _ in api.requests} == {KEY}
    assert not any(KEY in json.dumps(body) or SECRET in json.dumps(body) for _, body in api.requests)
    sent = api.events()
    started = [e for e in sent if e["eventType"] == "rollout"]
    assert sorted(e["rolloutName"] for e in started) == [f"echo-grpo/rank0/step0/{i}" for i in range(4)]
    assert {e["runName"] for e in started} == {"echo-grpo"} and {e["environment"] for e in started} == {"echo"}
    assert started[0]["run_info"] == {"model_name": "tiny-qwen3", "run_type": "train", "framework": "orlgen",
                                      "framework_version": __import__("orlgen").__version__}  # fmt: skip
    uploaded = []
    for e in started:
        logged = [m for m in sent if m.get("rolloutEventId") == e["eventId"]]
        assert sent.index(e) < sent.index(logged[0])  # a rollout is started before its messages are logged
        assert e["split"] == "train" and e["metadata"]["global_step"] == 0 and e["metadata"]["rank"] == 0
        assert [m["type"] for m in logged[:3]] == ["user_message", "tool_call", "tool_result"]
        assert logged[0]["content"].startswith("(account token ***) ")  # the secret, masked
        assert (logged[1]["name"], json.loads(logged[1]["content"])) == ("echo", {"text": "hello"})
        assert logged[2]["callId"] == logged[1]["callId"]
        assert logged[-1]["isFinished"] is True and not any(m["isFinished"] for m in logged[:-1])
        uploaded.append((e["metadata"]["task_index"], logged[-1].get("reward"), logged[2]["content"]))
    # Task 0 won, task 1 lost, as the server said: the env's reward and answer, per rollout.
    assert sorted(uploaded) == [(0, 1.0, "correct")] * 2 + [(1, 0.0, "wrong: 'hello'")] * 2
    metrics = trainer.state.log_history[0]
    assert (
        metrics["orlgen/upload_sent"] + metrics["orlgen/upload_pending"] == 4.0
    )  # at step end: each sent or on its way
    assert metrics["orlgen/upload_dropped"] == metrics["orlgen/upload_failed"] == 0.0


@pytest.mark.slow
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_a_stalled_api_never_blocks_the_step_and_the_queue_bound_drops(
    helpdesk_module, helpdesk_url, tiny_model_path, tmp_path, caplog
):
    """Fault injection: the stand-in API takes each request and answers nothing until released.
    One rollout sent before training occupies the uploader's thread in that request; the step's 4
    rollouts then meet a queue of 2: 2 wait, 2 are dropped (one warning line). The step completes
    with 3 rollouts pending (train end waits its bounded 0.1 s); once the API answers, the 2
    queued ones go."""
    api = RolloutAPI(stall=True)
    factory = Recorder(functools.partial(helpdesk_module.HelpdeskEnv, base_url=helpdesk_url))
    try:
        with serving(api), caplog.at_level(logging.WARNING, logger="orlgen"):
            upload = RolloutUpload("stalled-run", target=api.target, max_queue=2, timeout=600, flush_timeout=0.1)
            trainer = grpo_trainer(
                tmp_path, model=tiny_model_path, environment_factory=factory,
                train_dataset=helpdesk_module.build_dataset(indices=[0, 1]),
                reward_funcs=[*helpdesk_module.reward_funcs, upload.reward_func],
            )  # fmt: skip
            trainer.add_callback(upload.callback(trainer))
            before = {"env": "helpdesk", "split": "train", "task_index": 5, "messages": [], "reward": 1.0}
            assert upload.uploader.upload(before, global_step=7)
            assert wait_for(lambda: len(api.requests) == 1)  # the uploader's thread is in the stalled request

            trainer.train()

            assert upload.final == UploadStats(recorded=5, sent=0, failed=0, dropped=2, pending=3)
            metrics = trainer.state.log_history[0]
            assert (metrics["orlgen/upload_dropped"], metrics["orlgen/upload_pending"]) == (2.0, 3.0)
            full = [line for line in orlgen_lines(caplog) if "queue of 2 rollouts is full" in line]
            assert len(full) == 1 and "\n" not in full[0]
            assert any("0 of 5 rollouts sent" in line and "3 still pending" in line for line in orlgen_lines(caplog))

            api.release.set()  # the API answers again: the queued rollouts go
            assert upload.uploader.close(60) == UploadStats(recorded=5, sent=3, failed=0, dropped=2, pending=0)
    finally:
        api.release.set()
    names = sorted(e["rolloutName"] for e in api.events() if e["eventType"] == "rollout")
    assert names == ["stalled-run/rank0/step0/0", "stalled-run/rank0/step0/1", "stalled-run/rank0/step7/0"]


OPENAI_TRAJECTORY = [
    {"role": "user", "content": f"Ticket T-3 (token {SECRET}): refund it"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_ab", "type": "function", "function": {"name": "get_order", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_ab", "content": "order A1"},
    {"role": "assistant", "content": "Refunded."},
]


def test_the_agent_loops_trajectory_uploads_under_resumable_names():
    """The same uploader takes the agent loop's `Trajectory`. Names and event ids come from the
    run, rank, step and index: a run resumed at step 1 names its rollouts as the first attempt
    did, with the same ids, and no two ranks share a name."""
    api = RolloutAPI()
    with serving(api):
        for rank in (0, 0, 1):  # the run, the run resumed, and a second rank
            trajectory = Trajectory(split="train", task_index=3, messages=OPENAI_TRAJECTORY, reward=1.0)
            with RolloutUploader("agent-run", target=api.target, rank=rank, secrets=[SECRET]) as uploader:
                assert uploader.upload(trajectory, global_step=1, env="helpdesk")
                assert uploader.upload(trajectory, global_step=1, env="helpdesk")
            assert uploader.stats == UploadStats(recorded=2, sent=2)
    started = [e for e in api.events() if e["eventType"] == "rollout"]
    names = [e["rolloutName"] for e in started]
    assert names == ["agent-run/rank0/step1/0", "agent-run/rank0/step1/1"] * 2 + [
        "agent-run/rank1/step1/0",
        "agent-run/rank1/step1/1",
    ]
    ids = [e["eventId"] for e in started]
    assert ids[:2] == ids[2:4] and len(set(ids[:2] + ids[4:])) == 4  # the resumed run's ids are the first's
    messages = [e for e in api.events() if e.get("rolloutEventId") == ids[0]]
    assert [(m["type"], m.get("callId")) for m in messages[:4]] == [
        ("user_message", None), ("tool_call", "call_ab"), ("tool_result", "call_ab"), ("assistant_message", None),
    ]  # fmt: skip
    assert messages[0]["content"] == "Ticket T-3 (token ***): refund it"
    assert messages[-1]["reward"] == 1.0 and messages[-1]["isFinished"] is True


def test_a_refused_post_is_counted_in_one_line_and_never_raised(caplog):
    api = RolloutAPI(status=403)
    row = {"env": "helpdesk", "task_index": 0, "messages": OPENAI_TRAJECTORY, "reward": 0.0}
    with serving(api), caplog.at_level(logging.WARNING, logger="orlgen"):
        uploader = RolloutUploader("refused", target=api.target)
        for step in range(3):
            assert uploader.upload(row, global_step=step)
            assert wait_for(lambda n=step: uploader.stats.failed == n + 1)
        assert uploader.close(10) == UploadStats(recorded=3, failed=3)
    (refused,) = [line for line in orlgen_lines(caplog) if "not sent" in line]  # once per outage
    assert "HTTP 403" in refused and KEY not in refused
    assert any("0 of 3 rollouts sent" in line and "3 failed" in line for line in orlgen_lines(caplog))


def test_no_platform_key_is_one_line(monkeypatch):
    monkeypatch.delenv("OPENREWARD_API_KEY", raising=False)
    with pytest.raises(Exception, match=r"^uploading training rollouts needs the platform key in OPENREWARD_API_KEY$"):
        RolloutUpload("run")


@contextmanager
def one_post(uploader: RolloutUploader):
    """Fault injection on our own code: the test holds the uploader's lock (reentrant) while it
    queues, so its worker takes every rollout queued inside in one post."""
    with uploader._cond:
        yield


def started_names(api: RolloutAPI) -> list[str]:
    return sorted(e["rolloutName"] for e in api.events() if e["eventType"] == "rollout")


def test_a_rollout_that_cannot_be_encoded_fails_alone(caplog):
    """In one post: a rollout with a value that is not JSON, one whose message is not a mapping,
    and two good ones. The bad ones are failed (one line, the first), the good ones sent."""
    api = RolloutAPI()
    good = {"env": "helpdesk", "task_index": 0, "messages": OPENAI_TRAJECTORY, "reward": 1.0, "tool_calls": 1}
    with serving(api), caplog.at_level(logging.WARNING, logger="orlgen"):
        uploader = RolloutUploader("bad-ones", target=api.target)
        with one_post(uploader):
            assert uploader.upload(good, global_step=0)
            assert uploader.upload({**good, "rewards": {0.5}}, global_step=0)  # a set: not JSON
            assert uploader.upload({**good, "messages": ["not a message"]}, global_step=0)
            assert uploader.upload(good, global_step=0)
        assert uploader.close(10) == UploadStats(recorded=4, sent=2, failed=2)
    assert started_names(api) == ["bad-ones/rank0/step0/0", "bad-ones/rank0/step0/3"]
    started = [e for e in api.events() if e["eventType"] == "rollout"]
    assert started[0]["metadata"] == {"task_index": 0, "global_step": 0, "rank": 0, "index": 0, "tool_calls": 1}
    (said,) = [line for line in orlgen_lines(caplog) if "cannot be sent" in line]
    assert said.startswith("rollout upload: rollout bad-ones/rank0/step0/1 cannot be sent: TypeError")


def test_a_post_refused_part_way_counts_the_rollouts_wholly_sent():
    """Rollout a (2 events after its start) and b (201) in one post: the started batch, then
    a's and the first of b's events, then the rest of b's, which the API refuses (403). a went
    out whole: sent; b did not: failed."""
    api = RolloutAPI(statuses=(200, 200, 403))
    short = {"env": "helpdesk", "task_index": 0, "messages": OPENAI_TRAJECTORY[:1], "reward": 1.0}
    long = {**short, "messages": [{"role": "user", "content": f"turn {i}"} for i in range(200)]}
    with serving(api):
        uploader = RolloutUploader("part-way", target=api.target)
        with one_post(uploader):
            assert uploader.upload(short, global_step=0)
            assert uploader.upload(long, global_step=0)
        assert uploader.close(10) == UploadStats(recorded=2, sent=1, failed=1)
    assert [len(body["events"]) for _, body in api.requests] == [2, MAX_BATCH_ITEMS, 203 - MAX_BATCH_ITEMS]


class SlowToEnd(RolloutUploader):
    """Fault injection on our own code: the worker, once it has decided to end, stays alive until
    `let_end` is set, as a thread does for a moment after its last line under the lock."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ended = threading.Event()
        self.let_end = threading.Event()

    def _work(self) -> None:
        super()._work()
        self.ended.set()
        self.let_end.wait(60)


def test_a_rollout_queued_while_the_worker_ends_is_sent():
    api = RolloutAPI()
    with serving(api):
        uploader = SlowToEnd("restart", target=api.target)
        try:
            assert uploader.upload({"env": "helpdesk", "messages": []}, global_step=0)
            uploader.close(0)  # the worker drains the queue, then ends
            assert uploader.ended.wait(10)  # ...and is still alive
            assert uploader.upload({"env": "helpdesk", "messages": []}, global_step=1)  # e.g. a later evaluate()
            assert wait_for(lambda: uploader.stats.sent == 2)
        finally:
            uploader.let_end.set()
        assert uploader.close(10) == UploadStats(recorded=2, sent=2)
    assert started_names(api) == ["restart/rank0/step0/0", "restart/rank0/step1/0"]


def test_an_upload_during_close_does_not_keep_the_worker():
    """Fault injection: the stand-in API stalls the first post. close() asks the worker to end;
    a rollout queued then is sent, and the worker still ends once the queue is empty."""
    api = RolloutAPI(stall=True)
    with serving(api):
        uploader = RolloutUploader("closing", target=api.target)
        try:
            assert uploader.upload({"env": "helpdesk", "messages": []}, global_step=0)
            assert wait_for(lambda: len(api.requests) == 1)
            assert uploader.close(0).pending == 1  # asked to end; the post is still in flight
            assert uploader.upload({"env": "helpdesk", "messages": []}, global_step=1)
        finally:
            api.release.set()
        worker = uploader._worker
        assert worker is not None and wait_for(lambda: not worker.is_alive())
        assert uploader.stats == UploadStats(recorded=2, sent=2)


def test_the_api_url_is_shown_without_its_credentials(caplog):
    """The URL's user-info never reaches a repr or a log line, nor does the key (the lines: the
    full queue, the refused post, the summary at close)."""
    api = RolloutAPI(status=403)
    with serving(api), caplog.at_level(logging.WARNING, logger="orlgen"):
        host = api.target.url.removeprefix("http://")
        target = Target(f"http://user:hunter2@{host}", KEY)
        uploader = RolloutUploader("urls", target=target, max_queue=1)
        with one_post(uploader):
            assert uploader.upload({"env": "helpdesk", "messages": []}, global_step=0)
            assert not uploader.upload({"env": "helpdesk", "messages": []}, global_step=0)  # the queue is full
        assert uploader.close(10) == UploadStats(recorded=2, failed=1, dropped=1)
    lines = orlgen_lines(caplog)
    shown = [repr(uploader), repr(target), *lines]
    assert len(lines) == 3 and all("127.0.0.1" in line or "localhost" in line for line in shown)
    assert not any("hunter2" in line or KEY in line for line in shown)
    assert "HTTP 403" in lines[1]
