"""`orlgen eval --upload RUN_NAME`: rollouts posted to OpenReward's rollout API.

The API is a stand-in on loopback (starlette): it records every request, headers and body, and
answers as told: 200, a 4xx, a few 5xx then 200, or never (fault injection, said so). The
environment and the model are real loopback servers (the echo example, the scripted chat
server). The event shapes are checked against the openreward SDK's own event classes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from dataclasses import asdict

import pytest
from orlgen.eval.upload import Retry, Target, UploadFailed, batches, events, run_info, upload
from orlgen.runtime.ors.rollouts import TRAIN_METADATA_KEYS

from bench.chat_server import ChatServer, serving
from tests.support.cli import invoke, start_orlgen
from tests.support.models.scripted_policy import scripted

KEY = "orlgen-test-key-8c1f0d2e"
HANG_S = 3.0


class RolloutAPI:
    """A loopback stand-in for `POST /v1/rollouts`: records (headers, body) of each request and
    answers with `statuses` in turn (then 200); `hang` makes it never answer."""

    def __init__(self, statuses: tuple[int, ...] = (), hang: bool = False) -> None:
        self.statuses = list(statuses)
        self.hang = hang
        self.requests: list[tuple[dict[str, str], dict]] = []
        self.url = ""

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def rollouts(request):
            self.requests.append((dict(request.headers), await request.json()))
            if self.hang:  # far past the client's deadline, short enough for the server's shutdown
                await asyncio.sleep(HANG_S)
            status = self.statuses.pop(0) if self.statuses else 200
            return JSONResponse({"ok": status == 200, "detail": "said by the stand-in"}, status_code=status)

        return Starlette(routes=[Route("/v1/rollouts", rollouts, methods=["POST"])])

    @property
    def base(self) -> str:
        return self.url.removesuffix("/v1")

    def events(self) -> list[dict]:
        return [event for _, body in self.requests for event in body["events"]]


@pytest.fixture(scope="module")
def chat():
    with serving(ChatServer(scripted)) as server:
        yield server


ROW = {
    "env": "helpdesk",
    "split": "test",
    "task_index": 3,
    "sample": 1,
    "seed": 7,
    "model": "m",
    "messages": [
        {"role": "user", "content": "Support ticket T-3: refund it"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "A1"}'}},
                {"type": "function", "function": {"name": "issue_refund", "arguments": '{"order_id": "A1"}'}},
            ],
        },
        {"role": "tool", "name": "get_order", "content": "order A1: 2 items\x00"},
        {"role": "tool", "name": "issue_refund", "content": "refunded"},
        {"role": "assistant", "content": "The ticket is resolved."},
    ],
    "rewards": [None, 1.0],
    "reward": 1.0,
    "outcome": "finished",
    "unscored_reason": None,
    "stop": "answered",
    "timings": {"total_s": 0.25},
}


@pytest.mark.slow  # imports the openreward SDK (2 s)
def test_events_are_what_the_sdk_sends():
    from openreward.api.rollouts.background import _strip_none
    from openreward.api.rollouts.serializers.oai_completions import openai_completions_to_normalized
    from openreward.models import (
        LogMessageEvent,
        RolloutConfig,
        RolloutInfo,
        RolloutStartedEvent,
        RolloutUpdateEvent,
        RunInfo,
    )

    ids = iter(f"id-{i}" for i in range(100))
    info = run_info("m", "0.2.0")
    ours = events(ROW, "my-run", info, {"temperature": 1.0, "max_tokens": 512}, new_id=lambda: next(ids), now=lambda: 5)

    config = RolloutConfig(
        run_name="my-run",
        rollout_name="helpdesk/test/3/1",
        environment="helpdesk",
        split="test",
        metadata={
            key: ROW.get(key)
            for key in ("task_index", "sample", "seed", "model", "outcome", "unscored_reason", "stop", "rewards")
        },
        run_info=asdict(RunInfo(model_name="m", run_type="eval", framework="orlgen", framework_version="0.2.0")),
    )
    started = RolloutStartedEvent.from_config(event_id="id-0", timestamp=5, config=config)
    update = RolloutUpdateEvent(
        eventId="id-0",
        timestamp=5,
        rollout_info=asdict(
            RolloutInfo(task_index=3, duration_ms=250, harness="orlgen eval", temperature=1.0, max_tokens=512)
        ),
    )
    # The SDK's normalisation of the same conversation, with OpenAI call ids where TRL rows have none.
    openai = [dict(m) for m in ROW["messages"]]
    openai[1]["tool_calls"] = [{**c, "id": f"call_1_{j}"} for j, c in enumerate(openai[1]["tool_calls"])]
    openai[2] = {"role": "tool", "tool_call_id": "call_1_0", "content": openai[2]["content"]}
    openai[3] = {"role": "tool", "tool_call_id": "call_1_1", "content": openai[3]["content"]}
    normalized = openai_completions_to_normalized(openai)
    messages = [
        LogMessageEvent(
            eventId=f"id-{i + 1}",
            timestamp=5,
            index=i,
            rolloutEventId="id-0",
            type=n.type,
            content=n.content,
            name=n.name,
            callId=n.call_id,
            reward=1.0 if i == len(normalized) - 1 else None,
            isFinished=i == len(normalized) - 1,
            metadata={},
        )
        for i, n in enumerate(normalized)
    ]
    expected = [_strip_none(asdict(event)) for event in [started, update, *messages]]
    assert ours == expected
    assert [e.get("type") for e in ours[2:]] == ["user_message", "tool_call", "tool_call", "tool_result",
                                                 "tool_result", "assistant_message"]  # fmt: skip
    assert ours[5]["content"] == "order A1: 2 items"  # NUL dropped, as the SDK does


def test_an_eval_rollouts_metadata_holds_evals_keys_only():
    """A row with the counts a training rollout's metadata carries (`tool_calls`, `tool_errors`):
    eval's events send eval's keys, as `eval --upload` always has; training's add theirs."""
    row = {**ROW, "tool_calls": 2, "tool_errors": 0, "global_step": 4}
    started, *_ = events(row, "my-run", run_info("m", "0.2.0"), {})
    assert set(started["metadata"]) == {"task_index", "sample", "seed", "model", "outcome", "stop", "rewards"}
    trained, *_ = events(row, "my-run", run_info("m", "0.2.0"), {}, metadata_keys=TRAIN_METADATA_KEYS)
    assert trained["metadata"] == {**started["metadata"], "tool_calls": 2, "tool_errors": 0, "global_step": 4}


def test_batches_hold_at_most_128_events_and_1_mb():
    small = [b"x" * 10] * 300
    assert [len(b) for b in batches(small)] == [128, 128, 44]
    big = [b"y" * 400_000] * 5
    assert [len(b) for b in batches(big)] == [2, 2, 1]


@pytest.mark.slow
def test_upload_delivers_every_rollout_and_writes_the_key_nowhere(chat, echo_url, tmp_path, monkeypatch):
    api = RolloutAPI()
    out = tmp_path / "echo.jsonl"
    with serving(api):
        env = {"OPENREWARD_API_URL": api.base, "OPENREWARD_API_KEY": KEY}
        result = invoke(
            "eval", "generated/echo.py", "--base-url", chat.url, "--model", "scripted", "-n", 3, "-k", 2,
            "--env-url", echo_url, "--out", out, "--upload", "echo-eval-1", "--split", "train", env=env,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "uploaded 6 rollouts" in result.stderr and "as run 'echo-eval-1'" in result.stderr
    assert {headers["x-api-key"] for headers, _ in api.requests} == {KEY}
    sent = api.events()
    started = [e for e in sent if e["eventType"] == "rollout"]
    assert len(started) == 6 and {e["runName"] for e in started} == {"echo-eval-1"}
    assert started[0]["run_info"] == {"model_name": "scripted", "run_type": "eval", "framework": "orlgen",
                                      "framework_version": __import__("orlgen").__version__}  # fmt: skip
    assert sent[: len(started)] == started  # every rollout is started before any message is logged
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for e in started:
        logged = [m for m in sent if m.get("rolloutEventId") == e["eventId"]]
        task, sample = e["metadata"]["task_index"], e["metadata"]["sample"]
        (row,) = [r for r in rows if (r["task_index"], r["sample"]) == (task, sample)]
        assert [m["index"] for m in logged] == list(range(len(logged)))
        assert [m["type"] for m in logged] == ["user_message", "tool_call", "tool_result"]  # echo ends the episode
        assert logged[-1]["isFinished"] is True and logged[-1]["reward"] == row["reward"] == 1.0
        assert not any(m["isFinished"] for m in logged[:-1])
    assert KEY not in result.output and not any(KEY in p.read_text() for p in tmp_path.rglob("*") if p.is_file())


@pytest.mark.slow
def test_a_refused_upload_is_one_line_exit_2_and_keeps_the_rows(chat, echo_url, tmp_path):
    api = RolloutAPI(statuses=(403,))
    out = tmp_path / "echo.jsonl"
    with serving(api):
        env = {"OPENREWARD_API_URL": api.base, "OPENREWARD_API_KEY": KEY}
        result = invoke(
            "eval", "generated/echo.py", "--base-url", chat.url, "--model", "scripted", "-n", 2, "--split", "train",
            "--env-url", echo_url, "--out", out, "--upload", "run", env=env,
        )  # fmt: skip
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("orlgen: error: upload to ") and "HTTP 403" in line and "(0 of 10 events were sent)" in line
    assert len(api.requests) == 1  # a 4xx is not retried
    assert len(out.read_text().splitlines()) == 2 and "2 rollouts" in result.stdout  # rows and table kept
    assert KEY not in result.output


@pytest.mark.slow
def test_an_interrupted_run_resumed_with_upload_uploads_every_row_once(echo_url, tmp_path):
    """The interrupted session uploads nothing; the resume that completes the run uploads every
    row of rollouts.jsonl, the carried ones as written, each once."""
    api = RolloutAPI()
    run = tmp_path / "run"
    rows_file = run / "rollouts.jsonl"
    with serving(ChatServer(scripted, delay=0.3)) as chat, serving(api):
        env = {**os.environ, "OPENREWARD_API_URL": api.base, "OPENREWARD_API_KEY": KEY}
        args = ["eval", "generated/echo.py", "--base-url", chat.url, "--model", "m", "--env-url", echo_url,
                "-n", 3, "-k", 2, "--concurrency", 1, "--out", run, "--upload", "resumed-run"]  # fmt: skip
        child = start_orlgen(*args, env=env)
        deadline = time.monotonic() + 60
        while len(rows_file.read_bytes().splitlines() if rows_file.exists() else []) < 2:
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=30)
        assert child.returncode == 130 and "nothing uploaded: the run was interrupted" in stderr, stderr
        assert api.requests == []
        carried = rows_file.read_text().splitlines()
        assert 2 <= len(carried) < 6
        resumed = start_orlgen(*args, "--resume", env=env)
        _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    written = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert len(written) == 6 and "uploaded 6 rollouts" in stderr
    started = [e for e in api.events() if e["eventType"] == "rollout"]
    names = sorted(e["rolloutName"] for e in started)
    assert names == sorted(f"echo/train/{r['task_index']}/{r['sample']}" for r in written)  # each row once
    by_name = {e["rolloutName"]: e for e in started}
    for row in map(json.loads, carried):  # the carried rows went as written
        assert by_name[f"echo/train/{row['task_index']}/{row['sample']}"]["metadata"]["seed"] == row["seed"]


def test_no_key_stops_before_anything_runs(tmp_path):
    result = invoke(
        "eval", "generated/echo.py", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--upload", "run",
        "--out", tmp_path / "x.jsonl", env={"OPENREWARD_API_KEY": None},
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.strip() == "orlgen: error: --upload needs the platform key in OPENREWARD_API_KEY"
    assert not (tmp_path / "x.jsonl").exists()


def test_5xx_is_retried_on_the_sdk_schedule_and_then_delivered():
    api = RolloutAPI(statuses=(503, 500))
    with serving(api):
        sent = upload([ROW], "run", Target(api.base, KEY), run_info("m", "0"), {}, retry=Retry(base=0.01))
    assert sent == 8 and len(api.requests) == 4  # the started batch twice refused, then it and the rest
    assert api.requests[0][1] == api.requests[2][1]  # the same batch again
    assert Retry().wait(0) == 0.5 and Retry().wait(3) == 4.0 and Retry().wait(10) == 30.0


@pytest.mark.slow  # the stand-in's shutdown waits for its hanging answer
def test_a_hanging_api_fails_at_the_deadline():
    api = RolloutAPI(hang=True)
    with serving(api):
        start = time.monotonic()
        with pytest.raises(UploadFailed, match=r"did not arrive in time \(0 of 8 events were sent\)") as failed:
            upload([ROW], "run", Target(api.base, KEY), run_info("m", "0"), {}, timeout=0.5)
        assert time.monotonic() - start < HANG_S
    assert KEY not in str(failed.value) and "\n" not in str(failed.value)


def test_target_resolves_the_api_host_as_the_sdk(monkeypatch):
    monkeypatch.setenv("OPENREWARD_API_KEY", KEY)
    monkeypatch.delenv("OPENREWARD_API_URL", raising=False)
    monkeypatch.delenv("OPENREWARD_URL", raising=False)
    assert Target.from_env().url == "https://api.openreward.ai"
    monkeypatch.setenv("OPENREWARD_URL", "https://staging.example")
    assert Target.from_env().url == "https://api.staging.example"
    monkeypatch.setenv("OPENREWARD_API_URL", "http://127.0.0.1:1/")
    assert Target.from_env().url == "http://127.0.0.1:1"
    assert KEY not in repr(Target.from_env())
