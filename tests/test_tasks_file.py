"""A snapshot's tasks file: written by the C encoder, read back only when canonical."""

from __future__ import annotations

import pytest
from orlgen.snapshot import tasks_file
from orlgen.snapshot.tasks_file import TasksFileError

ROWS = [("test", 0, {"q": "é", "n": 1.5}), ("train", 0, {"q": "a"}), ("train", 1, {"q": "x\ud800", "k": None})]


def test_rows_round_trip_one_line_each_surrogates_escaped():
    text = tasks_file.encode(ROWS)
    assert text.splitlines()[0] == '{"index": 0, "spec": {"n": 1.5, "q": "é"}, "split": "test"}'
    assert '"x\\ud800"' in text and text.encode()  # valid UTF-8: the lone surrogate is an escape
    assert tasks_file.decode(text.encode()) == {
        "test": [(0, {"q": "é", "n": 1.5})],
        "train": [(0, {"q": "a"}), (1, {"q": "x\ud800", "k": None})],
    }


@pytest.mark.parametrize(
    ("edit", "cause"),
    [
        (lambda t: t.replace('"n": 1.5', '"n": NaN'), "line 1: not what orlgen writes"),
        (lambda t: t.replace('"n": 1.5', '"n": 1e400'), "line 1: not what orlgen writes"),
        (lambda t: t.replace('{"q": "a"}', '{"q": "a", "q": "b"}'), "line 2: not what orlgen writes"),
        (lambda t: t.replace('"index": 0, "spec": {"q": "a"}', '"index": 0,  "spec": {"q": "a"}'), "line 2: not what"),
        (lambda t: "\n".join(reversed(t.splitlines())) + "\n", "not in (split, index) order"),
        (lambda t: t[:-1], "cut short"),
        (lambda t: t + '{"index": 2, "spec": [], "split": "train"}\n', "line 4: split must be text, index a number"),
        (lambda t: t + '{"index": 2, "split": "train"}\n', "line 4: not an object of exactly index, spec, split"),
    ],
    ids=["nan", "overflow", "repeated-key", "spacing", "order", "cut", "spec-type", "missing-key"],
)
def test_anything_but_what_orlgen_writes_is_refused_naming_the_line(edit, cause):
    with pytest.raises(TasksFileError, match=cause.replace("(", r"\(").replace(")", r"\)")):
        tasks_file.decode(edit(tasks_file.encode(ROWS)).encode())
