"""`orlgen eval` runs people keep (issue 29): run directories, resume, per-task results, the
completion cache and the progress line.

Real parts only, as in `test_eval.py`: the echo env's ORS server on loopback (`echo_url`), the
scripted OpenAI-compatible endpoint (`bench/chat_server.py`), the installed `orlgen` script for the
Ctrl-C test. Policies that fail on purpose are fault injection and say so.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pty
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from orlgen.eval.progress import Progress
from orlgen.eval.rollout import Rollout
from orlgen.eval.stats import pass_hat_k, summarize, task_filter

from bench.chat_server import ChatServer, Refuse, call, serving, turn_of
from tests.support.cli import REPO, command, invoke, start_orlgen
from tests.support.models.scripted_policy import scripted


@pytest.fixture(scope="module")
def chat():
    with serving(ChatServer(scripted)) as server:
        yield server


def evaluate(*args, env=None):
    return invoke("eval", *args, env=env)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def keys(written: list[dict]) -> list[tuple]:
    return [(r["env"], r["split"], r["task_index"], r["sample"]) for r in written]


def echo_args(url: str, env_url: str, *more) -> list:
    return ["generated/echo.py", "--base-url", url, "--model", "m", "--env-url", env_url, *more]


def slips_on_task_two(body):
    """Echoes every target, except on task 2 ('open reward') where odd seeds echo a wrong text:
    task 2's group has two rewards, the others one."""
    if turn_of(body) == 0 and "'open reward'" in body["messages"][0]["content"] and body["seed"] % 2:
        return call("echo", {"text": "wrong"}, 0)
    return scripted(body)


# --- per task: pass^k, the tasks list, the task filter --------------------------------------


def test_pass_hat_k_is_every_sample_passing():
    assert pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert pass_hat_k(4, 1, 1) == 0.25  # k = 1: pass@1
    with pytest.raises(ValueError):
        pass_hat_k(2, 3, 1)


def test_per_task_stats_and_the_filter_build_dataset_reads(echo_module):
    def rollout(task, sample, reward):
        return Rollout("echo", "train", task, sample, 0, reward=reward, outcome="finished", started=1.0, ended=2.0)

    done = [rollout(0, 0, 1.0), rollout(0, 1, 1.0), rollout(2, 0, 0.0), rollout(2, 1, 1.0), rollout(5, 0, None)]
    done.append(rollout(5, 1, 0.5))
    (split,) = summarize(done, 2, None)
    assert [(t.task_index, t.rewards, t.mean, t.passes, t.equal) for t in split.per_task] == [
        (0, [1.0, 1.0], 1.0, 2, True),
        (2, [0.0, 1.0], 0.5, 1, False),
        (5, [None, 0.5], 0.5, 0, True),  # one scored reward: nothing to compare, teaches nothing
    ]
    assert split.pass_hat_k == pytest.approx((1 + 0 + 0) / 3) and split.pass_at_k == pytest.approx(2 / 3)
    chosen = task_filter([split], {("echo", "train"): 8})
    assert chosen == {"echo": {"train": {"exclude": [0, 5], "indices": [1, 2, 3, 4, 6, 7]}}}
    dataset = echo_module.build_dataset("train", indices=chosen["echo"]["train"]["indices"])
    assert dataset["task_index"] == [1, 2, 3, 4, 6, 7]


def test_by_task_json_tasks_and_the_emitted_filter(echo_url, echo_module, tmp_path):
    chosen = tmp_path / "filter.json"
    with serving(ChatServer(slips_on_task_two)) as server:
        args = echo_args(server.url, echo_url, "-n", 4, "-k", 2, "--seed", 0)
        table = evaluate(*args, "--by-task", "--emit-task-filter", chosen)
        as_json = evaluate(*args, "--format", "json")
    assert table.exit_code == 0 and as_json.exit_code == 0, table.output + as_json.output
    lines = table.stdout.splitlines()
    width = len("tool calls / rollout")
    assert f"  {'pass^2'.ljust(width)}  75.0%" in lines and f"  {'pass@2'.ljust(width)}  100.0%" in lines
    start = lines.index("    task    mean   passes")
    assert lines[start + 1 : start + 5] == [
        "       0   1.000      2/2  equal",
        "       1   1.000      2/2  equal",
        "       2   0.500      1/2",
        "       3   1.000      2/2  equal",
    ]
    report = json.loads(as_json.stdout)
    assert report["splits"][0]["pass_hat_k"] == 0.75
    assert report["tasks"][2] == {
        "env": "echo", "split": "train", "task_index": 2, "rewards": [1.0, 0.0], "mean": 0.5, "passes": 1,
        "equal": False,
    }  # fmt: skip
    written = json.loads(chosen.read_text())
    assert written == {"echo": {"train": {"exclude": [0, 1, 3], "indices": [2, 4, 5, 6, 7]}}}
    assert echo_module.build_dataset("train", indices=written["echo"]["train"]["indices"]).num_rows == 5


# --- run directories and resume -------------------------------------------------------------


def test_a_run_directory_holds_its_config_and_rows_and_is_never_started_twice(chat, echo_url, tmp_path):
    run = tmp_path / "run"
    args = echo_args(chat.url, echo_url, "-n", 3, "-k", 2, "--out", run)
    first = evaluate(*args, "--temperature", 0.5, env={"OPENAI_API_KEY": "sk-never-written"})
    assert first.exit_code == 0, first.output
    config = json.loads((run / "config.json").read_text())
    assert {key: config[key] for key in ("subject", "model", "endpoint", "splits", "num_tasks", "k", "seed")} == {
        "subject": "generated/echo.py", "model": "m", "endpoint": chat.url, "splits": [], "num_tasks": 3, "k": 2,
        "seed": 0,
    }  # fmt: skip
    assert config["environments"] == {"echo": "77195c9fb48df0bdbe0e3b40e2a6576f23fc9095713453315c261bddf41d9754"}
    assert (config["temperature"], config["max_turns"], config["max_tokens"]) == (0.5, 10, 512)
    assert config["reach"] == {"env_url": echo_url, "api_key_env": None}
    assert "sk-never-written" not in "".join(path.read_text() for path in run.iterdir())
    written = (run / "rollouts.jsonl").read_bytes()
    assert sorted(keys(rows(run / "rollouts.jsonl"))) == [("echo", "train", t, s) for t in range(3) for s in range(2)]

    again = evaluate(*args, "--temperature", 0.5)
    assert again.exit_code == 2 and again.stderr.count("\n") == 1
    assert "holds a run already: add --resume to continue it" in again.stderr
    assert (run / "rollouts.jsonl").read_bytes() == written

    requests = len(chat.requests)
    resumed = evaluate(*args, "--temperature", 0.5, "--resume", "--format", "json")  # nothing is missing
    assert resumed.exit_code == 0, resumed.output
    assert len(chat.requests) == requests and (run / "rollouts.jsonl").read_bytes() == written
    report = json.loads(resumed.stdout)
    assert (report["rollouts"], report["played"], report["splits"][0]["mean_reward"]) == (6, 0, 1.0)


def test_a_resume_that_differs_or_a_bad_run_directory_is_one_line(chat, echo_url, tmp_path):
    run = tmp_path / "run"
    assert evaluate(*echo_args(chat.url, echo_url, "-n", 2, "--out", run)).exit_code == 0
    before = {path.name: path.read_bytes() for path in run.iterdir()}
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(run)
    edited = tmp_path / "edited"
    edited.mkdir()
    config = json.loads((run / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, "k": 1, "num_tasks": 8}))
    garbled, stranger = tmp_path / "garbled", tmp_path / "stranger"
    for copy, line in (
        (garbled, "not a row\n"),
        (stranger, json.dumps({**rows(run / "rollouts.jsonl")[0], "task_index": 99}) + "\n"),
    ):
        shutil.copytree(run, copy)
        with (copy / "rollouts.jsonl").open("a") as rows_file:
            rows_file.write(line)
    forged = tmp_path / "forged"  # sealed as orlgen seals, but an older or foreign layout: no `k`
    forged.mkdir()
    body = {key: value for key, value in config.items() if key not in ("sha256", "k")}
    seal = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    (forged / "config.json").write_text(json.dumps({**body, "sha256": seal}))
    for args, message in (
        (echo_args(chat.url, echo_url, "-n", 2, "-k", 3, "--out", run, "--resume"), "refused, the run differs: k is 1 in config.json, 3 now"),
        (echo_args(chat.url, echo_url, "-n", 2, "--seed", 7, "--resume", run), "seed is 0 in config.json, 7 now"),
        (["--resume", run, "-k", 2], "refused, the run differs: k is 1 in config.json, 2 now"),
        (["--resume", tmp_path / "foreign"], "is not an orlgen eval run directory (it has no config.json)"),
        (["--resume", tmp_path / "missing"], "no such run directory"),
        (["--resume", tmp_path / "link"], "is a symbolic link: refused"),
        (echo_args(chat.url, echo_url, "--out", tmp_path / "link"), "link is not a directory"),
        (["--resume", edited], "was edited by hand (its sha256 no longer matches it): resume refused"),
        (["--resume", forged], "config.json lacks k: it was not written by this orlgen eval"),
        (["--resume", garbled], "rollouts.jsonl line 3 is not a row of orlgen eval (JSONDecodeError"),
        (["--resume", stranger], "line 3: ('echo', 'train', 99, 0) is not a rollout of this run's configuration"),
        (echo_args(chat.url, echo_url, "--out", tmp_path / "foreign"), "is not empty and holds no orlgen eval run"),
        (echo_args(chat.url, echo_url, "--out", tmp_path / "file"), "is not a directory (a name ending in .jsonl"),
        (echo_args(chat.url, echo_url, "--out", tmp_path / "x.jsonl", "--resume"), "not the single file"),
        (["--resume"], "--resume needs the run directory"),
        (echo_args(chat.url, echo_url, "--cache", tmp_path / "file"), "--cache " + str(tmp_path / "file") + " is a file"),
    ):  # fmt: skip
        result = evaluate(*args)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
        assert result.stderr.startswith("orlgen: error: ") and message in result.stderr, result.stderr
    assert {path.name: path.read_bytes() for path in run.iterdir()} == before
    assert len(rows(stranger / "rollouts.jsonl")) == 3  # a refused resume rewrites nothing
    assert sorted(path.name for path in (tmp_path / "foreign").iterdir()) == ["notes.txt"]
    assert (tmp_path / "file").read_text() == "x"


def test_a_resume_replays_only_rollouts_that_failed_on_infrastructure(echo_url, tmp_path):
    down = {"task two": True}

    def refuse_task_two_once(body):  # fault injection: the endpoint answers 400 to one task, then recovers
        if down["task two"] and "'open reward'" in body["messages"][0]["content"]:
            raise Refuse(400)
        return scripted(body)

    run = tmp_path / "run"
    with serving(ChatServer(refuse_task_two_once)) as server:
        first = evaluate(*echo_args(server.url, echo_url, "-n", 4, "--out", run))
        assert first.exit_code == 0, first.output
        assert [r["outcome"] for r in rows(run / "rollouts.jsonl") if r["task_index"] == 2] == ["policy_error"]
        down["task two"] = False
        asked = len(server.requests)
        resumed = evaluate("--resume", run, "--format", "json")  # the run's own settings, from config.json
        assert resumed.exit_code == 0, resumed.output
        replayed = server.requests[asked:]
    assert len(replayed) == 1 and all("'open reward'" in body["messages"][0]["content"] for body in replayed)
    written = rows(run / "rollouts.jsonl")
    assert sorted(keys(written)) == [("echo", "train", t, 0) for t in range(4)]
    assert all(r["outcome"] == "finished" and r["reward"] == 1.0 for r in written)
    (superseded,) = rows(run / "superseded.jsonl")
    assert (superseded["task_index"], superseded["outcome"]) == (2, "policy_error")
    report = json.loads(resumed.stdout)
    assert (report["rollouts"], report["played"], report["splits"][0]["scored"]) == (4, 1, 4)


@pytest.mark.slow
def test_an_interrupted_run_resumes_to_n_times_k_rows_none_played_twice(echo_url, tmp_path):
    run = tmp_path / "run"
    with serving(ChatServer(scripted, delay=0.3)) as server:
        args = echo_args(server.url, echo_url, "-n", 4, "-k", 4, "--concurrency", 2, "--out", run)
        child = start_orlgen("eval", *args)
        deadline = time.monotonic() + 60
        while len((run / "rollouts.jsonl").read_bytes().splitlines() if (run / "rollouts.jsonl").exists() else []) < 3:
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)
        child.communicate(timeout=30)
        assert child.returncode == 130
        first = rows(run / "rollouts.jsonl")
        assert 3 <= len(first) < 16
        with (run / "rollouts.jsonl").open("a") as rows_file:
            rows_file.write('{"env": "echo", "split": "tr')  # a row a kill cut short
        resumed = start_orlgen("eval", *args, "--resume")
        stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    written = rows(run / "rollouts.jsonl")
    assert len(written) == 16 and len(set(keys(written))) == 16  # n × k, each once
    assert written[: len(first)] == first  # what finished before Ctrl-C was kept, not played again
    assert all(r["reward"] == 1.0 for r in written) and "16 (4 per task)" in stdout
    assert not (run / "superseded.jsonl").exists()


# --- the completion cache ---------------------------------------------------------------------


def test_a_cached_rerun_asks_the_model_nothing_and_scores_the_same(echo_url, tmp_path):
    cache = tmp_path / "cache"
    with serving(ChatServer(slips_on_task_two)) as server:
        args = echo_args(server.url, echo_url, "-n", 4, "-k", 2, "--cache", cache, "--format", "json")
        first = evaluate(*args, "--out", tmp_path / "first.jsonl")
        asked = len(server.requests)
        again = evaluate(*args, "--out", tmp_path / "again.jsonl")
        assert len(server.requests) == asked == 8  # a turn per rollout (the echo ends the episode), then none
    assert first.exit_code == again.exit_code == 0, first.output + again.output
    drop = ("wall_s", "rollouts_per_s", "out")
    before, after = (json.loads(result.stdout) for result in (first, again))
    for report in (before, after):
        for split in report["splits"]:
            split.pop("wall_s")
    assert {k: v for k, v in before.items() if k not in drop} == {k: v for k, v in after.items() if k not in drop}
    assert before["splits"][0]["mean_reward"] == 0.875  # one rollout of eight echoed wrong
    strip = ("timings", "started", "ended")
    first_rows, again_rows = (
        [{k: v for k, v in row.items() if k not in strip} for row in rows(tmp_path / name)]
        for name in ("first.jsonl", "again.jsonl")
    )
    assert sorted(first_rows, key=str) == sorted(again_rows, key=str)
    assert len(list(cache.glob("*/*.json"))) == 8


# --- progress ---------------------------------------------------------------------------------


def test_progress_lines_only_when_asked_off_a_terminal(chat, echo_url):
    quiet = evaluate(*echo_args(chat.url, echo_url, "-n", 2))
    loud = evaluate(*echo_args(chat.url, echo_url, "-n", 2, "--progress"))
    assert quiet.exit_code == loud.exit_code == 0 and quiet.stderr == ""
    lines = loud.stderr.splitlines()
    assert 1 <= len(lines) <= 2 and "\r" not in loud.stderr  # the first, then the last (rate-limited)
    assert lines[-1].startswith("rollouts 2/2  mean reward 1.000  errors 0  (")


def test_progress_on_a_terminal_rewrites_one_line():
    stream = io.StringIO()
    progress = Progress(3, stream, terminal=True)
    for reward, outcome in ((1.0, "finished"), (None, "env_error"), (0.0, "finished")):
        progress.update(Rollout("e", "s", 0, 0, 0, reward=reward, outcome=outcome))
    progress.close()
    shown = stream.getvalue()
    assert shown.count("\r") == 3 and shown.endswith("\n") and shown.count("\n") == 1
    assert shown.split("\r")[-1].startswith("rollouts 3/3  mean reward 0.500  errors 1  (")


@pytest.mark.slow
def test_progress_on_a_real_terminal_is_one_line_rewritten(chat, echo_url):
    """stderr on a pseudo-terminal: the line is rewritten in place (`\\r`), then ended once."""
    primary, secondary = pty.openpty()
    child = subprocess.Popen(
        command("eval", *echo_args(chat.url, echo_url, "-n", 3)), cwd=REPO, stdout=subprocess.PIPE, stderr=secondary
    )
    os.close(secondary)
    stdout, _ = child.communicate(timeout=120)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # the terminal's other side is closed: all is read
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    assert child.returncode == 0 and b"echo / train" in stdout
    text = shown.decode()
    assert text.count("\r") >= 3 and "rollouts 3/3  mean reward 1.000  errors 0" in text, text
