"""`report.html`: a run directory's page, opened in a real headless Chromium (Debian's package,
driven over the DevTools protocol: `tests/support/browser.py`).

The run is real: `orlgen eval` of the canvas example (an ORS server whose prompt and tool results
carry PNG images) with a scripted model on a loopback chat server. The model is untrusted, as a
server is: one of its answers carries markup (`</script>`, `<img onerror>`) that the page must
show as text. The only thing the test writes by hand is, where said, a row file with bad lines.
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest
from orlgen.eval.errors import EvalError
from orlgen.eval.html import write_report
from orlgen.eval.records import MAX_IMAGE_BYTES, media
from orlgen.eval.rundir import read_rows
from orlgen.serve import ServerProcess

from bench.chat_server import ChatServer, call, serving, turn_of
from tests.support.browser import Page
from tests.support.cli import invoke
from tests.support.models.scripted_policy import scripted
from tests.support.modules import REPO

HOSTILE = "</script><img src=x onerror=window.pwned=1><script>window.pwned=2</script>"


def canvas_policy(body: dict) -> dict:
    """Looks at the canvas, then says "red" on even seeds (right on the red task) and markup on
    odd ones (always wrong, and shown as text)."""
    turn = turn_of(body)
    if turn == 0:
        return call("screenshot", {}, turn)
    return call("answer", {"colour": "red" if (int(body.get("seed", 0)) - turn) % 2 == 0 else HOSTILE}, turn)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run directory of a real eval: 4 canvas tasks × 2 samples."""
    directory = tmp_path_factory.mktemp("run")
    with serving(ChatServer(canvas_policy)) as chat, ServerProcess("examples.canvas:Canvas") as server:
        result = invoke(
            "eval", REPO / "generated" / "canvas.py", "--base-url", chat.url, "--model", "scripted", "-k", 2,
            "--split", "train", "--env-url", server.url, "--out", directory / "rollouts.jsonl", "--seed", 0,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    (directory / "config.json").write_text(json.dumps({"subject": "generated/canvas.py", "k": 2, "n": 4}))
    return directory


@pytest.mark.slow
def test_rows_keep_images_for_the_report_and_stay_sft_trainable(run_dir):
    from datasets import load_dataset

    rows = read_rows(run_dir / "rollouts.jsonl")
    assert len(rows) == 8
    first = rows[0].data
    assert "[image]" in first["messages"][0]["content"]  # the column SFTTrainer reads stays text
    kept = json.loads(first["media"])
    assert {(item["message"], item["part"]) for item in kept} == {
        (0, 2),
        (2, 0),
    }  # the prompt (after its two texts), the screenshot
    png = base64.b64decode(kept[0]["url"].removeprefix("data:image/png;base64,"))
    assert png.startswith(b"\x89PNG") and int.from_bytes(png[16:20], "big") == 56
    loaded = load_dataset("json", data_files=str(run_dir / "rollouts.jsonl"))["train"]
    assert loaded.num_rows == 8 and isinstance(loaded[0]["media"], str)


@pytest.mark.slow
def test_the_report_opens_in_chromium_with_its_tables_and_trajectories(run_dir, tmp_path):
    report = write_report(run_dir)
    assert report == run_dir / "report.html"
    page_text = report.read_text()
    assert HOSTILE not in page_text and "http://" not in page_text and "https://" not in page_text  # nothing fetched
    with Page(report.as_uri()) as page:
        page.settle()
        assert page.errors == []
        summary = page.evaluate("document.getElementById('summary').innerText")
        assert "canvas / train" in summary and "8 (2 per task)" in summary and "pass@2" in summary
        assert page.evaluate("document.querySelectorAll('svg.histogram rect').length") == 10
        assert page.evaluate("document.querySelectorAll('#tasks tbody tr').length") == 4
        assert page.evaluate("document.querySelectorAll('details.rollout').length") == 8

        # A trajectory opens: its tool call, its tool result and the screenshot it showed.
        closed = page.evaluate("document.querySelector('#rollout-1 .message.tool').checkVisibility()")
        assert closed is False  # hidden until opened
        page.evaluate("document.getElementById('rollout-1').open = true")
        opened = page.evaluate("document.getElementById('rollout-1').innerText")
        assert "→ screenshot" in opened and "The canvas is 56x56 pixels." in opened and "wrong" in opened
        widths = page.evaluate("[...document.querySelectorAll('#rollout-1 img.shot')].map(i => i.naturalWidth)")
        assert widths == [56, 56]  # the prompt's canvas and the screenshot, decoded

        # The model's markup is text: no element, no script ran.
        assert HOSTILE in opened
        assert page.evaluate("window.pwned") is None
        assert page.evaluate("document.querySelectorAll('img:not(.shot), script').length") == 1  # the page's own

        # The task rows sort by a clicked column, both ways.
        order = "[...document.querySelectorAll('#tasks tbody tr')].map(r => r.cells[4].dataset.v)"
        page.evaluate("document.querySelector('#tasks thead th:nth-child(5)').click()")
        ascending = page.evaluate(order)
        assert [float(v) for v in ascending] == sorted(float(v) for v in ascending)
        page.evaluate("document.querySelector('#tasks thead th:nth-child(5)').click()")
        assert page.evaluate(order) == ascending[::-1]
        page.screenshot(tmp_path / "report.png")
        assert page.errors == []


def test_a_report_is_replaced_whole_and_needs_no_config(tmp_path):
    (tmp_path / "rollouts.jsonl").write_text("")
    (tmp_path / "report.html").write_text("old")
    write_report(tmp_path)
    assert "No rollouts yet." in (tmp_path / "report.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "rollouts.jsonl"]  # no temporary left


def test_bad_rows_and_config_are_one_line_each(tmp_path):
    counted = {"rewards": [1.0], "reward": 1.0, "outcome": "finished", "reason": None, "stop": "answered"}
    row = {"env": "e", "split": "train", "task_index": 0, "sample": 0, "seed": 0, **counted}
    row |= {"turns": 1, "tool_calls": 0, "tool_errors": 0}
    rows = tmp_path / "rollouts.jsonl"
    # Written by hand: a good row, then a row cut short by a crash (no newline): left out.
    rows.write_text(json.dumps(row) + "\n" + json.dumps(row)[:10])
    assert [r.data for r in read_rows(rows)] == [row]
    for bad in ("[1, 2]", json.dumps({key: value for key, value in row.items() if key != "turns"})):  # no turns
        rows.write_text(json.dumps(row) + "\n" + bad + "\n")
        with pytest.raises(EvalError, match=r"rollouts.jsonl line 2 is not a row of orlgen eval"):
            write_report(tmp_path)
    rows.write_text(json.dumps(row) + "\n")
    (tmp_path / "config.json").write_text("[]")
    with pytest.raises(EvalError, match="not a run configuration"):
        write_report(tmp_path)
    assert not (tmp_path / "report.html").exists()  # nothing half-written


def test_images_are_kept_within_bounds():
    from PIL import Image

    small = Image.new("RGB", (8, 8), (1, 2, 3))
    noisy = Image.frombytes("RGB", (400, 400), random.Random(0).randbytes(400 * 400 * 3))  # PNG over the bound
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "image": small}]},
        {"role": "tool", "content": [{"type": "image", "image": noisy}, {"type": "image", "image": "not an image"}]},
    ]
    kept = media(messages)
    assert kept[0]["message"] == 0 and kept[0]["url"].startswith("data:image/png;base64,")
    assert kept[1]["omitted"].endswith("over the bound") and int(kept[1]["omitted"].split()[0]) > MAX_IMAGE_BYTES
    assert kept[2] == {"message": 1, "part": 1, "omitted": "not an image orlgen can encode"}


def _summary_of_page(page: str) -> dict[str, str]:
    """The summary table of a one-split report.html, line name -> value, read with html.parser."""
    from html.parser import HTMLParser

    cells: list[list[str]] = []

    class Summary(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = self.inside or dict(attrs).get("id") == "summary"
            if self.inside and tag == "tr":
                cells.append([])
            elif self.inside and tag in ("th", "td"):
                cells[-1].append("")

        def handle_endtag(self, tag):
            self.inside = self.inside and tag != "table"

        def handle_data(self, data):
            if self.inside and cells and cells[-1]:
                cells[-1][-1] += data

    Summary().feed(page)
    return {line[0]: line[1] for line in cells[1:]}


def _summary_of_table(stdout: str) -> dict[str, str]:
    """The text table of a one-split run, line name -> value, with its head's pass threshold."""
    head, *lines = stdout.split("\n\n")[0].splitlines()
    named = dict(line.strip().split("  ", 1) for line in lines)
    return {"pass threshold": head.rpartition(">= ")[2].rstrip(")"), **{k: v.strip() for k, v in named.items()}}


@pytest.mark.slow
def test_the_report_counts_passes_with_the_runs_pass_threshold(helpdesk_url, tmp_path):
    """--pass-threshold is recorded in config.json and the report counts with it: its numbers are
    the printed table's, after the run and after each resume (one that names no threshold keeps
    the run's; one that names another records it). Helpdesk pays 0.5 for a ticket closed without
    its action, so the threshold changes the passes. Wall time is left out: the report reads it
    from rows rounded to the millisecond."""
    run = tmp_path / "run"
    common = ("--base-url", None, "--model", "scripted", "--env-url", helpdesk_url, "--split", "train")
    with serving(ChatServer(scripted)) as chat:
        args = [chat.url if a is None else a for a in common]
        sessions = (
            ("generated/helpdesk.py", *args, "-n", 4, "-k", 2, "--out", run, "--pass-threshold", 0.5),
            ("--resume", run),
            ("--resume", run, "--pass-threshold", 0.25),
        )
        for session, threshold in zip(sessions, ("0.5", "0.5", "0.25"), strict=True):
            result = invoke("eval", *session)
            assert result.exit_code == 0, result.output
            table = _summary_of_table(result.stdout)
            page = _summary_of_page((run / "report.html").read_text())
            assert table.pop("wall time") and page.pop("wall time")
            assert table["pass threshold"] == threshold and page == table
            assert json.loads((run / "config.json").read_text())["pass_threshold"] == float(threshold)
    rewards = {row["reward"] for row in map(json.loads, (run / "rollouts.jsonl").read_text().splitlines())}
    assert any(0.5 <= reward < 1.0 for reward in rewards), rewards  # the threshold decided some passes
