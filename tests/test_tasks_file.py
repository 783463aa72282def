"""A snapshot's tasks file: written by the C encoder, read back only when canonical, by one reader
that `check` and `build_dataset` share."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from orlgen.runtime.data import tasks_file
from orlgen.runtime.data.dataset import DatasetError
from orlgen.runtime.data.tasks_file import TasksFileError
from orlgen.snapshot import model as snapshot_model

from tests.support.cli import invoke
from tests.support.modules import load_module

REPO = Path(__file__).resolve().parent.parent

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


# --------------------------------------------------------------------------------------------
# every string round-trips; one reader for check and the runtime (issue 26, items 3 and 12)
# --------------------------------------------------------------------------------------------

# Every character `str.splitlines()` splits on: Unicode's line-break classes LF, CR, BK (VT, FF,
# U+2028, U+2029) and NL (U+0085), and the ASCII file, group and record separators.
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_TEXT = st.text(st.one_of(st.sampled_from(LINE_BREAKS + '\r\n\ud800\udfff\t\\"'), st.characters(codec=None)))
_SPECS = st.dictionaries(_TEXT, st.one_of(_TEXT, st.integers(), st.lists(_TEXT, max_size=3)), max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TEXT, _SPECS), max_size=5))
def test_any_text_round_trips_one_row_per_line_as_a_reviewer_sees_it(drawn):
    rows = [(split, index, spec) for index, (split, spec) in enumerate(drawn)]
    rows.sort(key=lambda row: (row[0], row[1]))
    text = tasks_file.encode(rows)
    assert len(text.splitlines()) == len(rows) == text.count("\n")  # what git and a diff show as lines
    assert not any(ch in text for ch in LINE_BREAKS.replace("\n", ""))
    found = tasks_file.decode(text.encode())
    assert [(split, index, spec) for split in found for index, spec in found[split]] == rows


TWO = tasks_file.encode([("train", 0, {"q": "a"}), ("train", 1, {"q": "b"})])
END = TWO.index("\n") + 1  # the column of the first line's end


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        (TWO.replace("\n", "\r\n"), f"line 1: holds a carriage return (CRLF line ends?) U+000D at column {END}"),
        (TWO.replace("\n", ", ", 1), "line 1: not one JSON row (Extra data"),
        (TWO.replace("\n", "\x1e", 1), f"line 1: holds a raw line separator U+001E at column {END}"),
        (TWO.replace("\n", "\u2028", 1), f"line 1: holds a raw line separator U+2028 at column {END}"),
        (TWO.replace('"a"', '"a\u2029"'), "line 1: holds a raw line separator U+2029 at column 30"),
        (TWO.replace('"b"', '"b\x85"'), "line 2: holds a raw line separator U+0085 at column 30"),
        (TWO.replace("\n", "\n\n", 1), "line 2: not one JSON row"),
    ],
    ids=["crlf", "two-rows-one-line", "record-separator", "u2028-between", "u2029-inside", "nel-inside", "blank"],
)
def test_every_other_line_shape_is_one_message_naming_the_line(text, cause):
    with pytest.raises(TasksFileError) as caught:
        tasks_file.decode(text.encode())
    assert str(caught.value).startswith(cause) and "\n" not in str(caught.value)


def test_the_runtime_reads_with_the_reader_check_uses(tmp_path):
    """`build_dataset`'s reader is `tasks_file.decode`: a file check would refuse is refused."""
    from orlgen.runtime.data.dataset import _rows

    data = TWO.replace("\n", "\x1e", 1).encode()
    with pytest.raises(TasksFileError, match="line 1: holds a raw line separator U\\+001E"):
        _rows(hashlib.sha256(data).hexdigest(), data)


@pytest.fixture(scope="module")
def web_text(tmp_path_factory):
    """`tests.support.envs.web_text:WebText` captured by `orlgen snapshot` from its real server."""
    out = tmp_path_factory.mktemp("web") / "generated"
    result = invoke("snapshot", "tests.support.envs.web_text:WebText", "--out", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_web_text_tasks_capture_check_and_build_byte_for_byte(web_text):
    from tests.support.envs.web_text import TASKS

    tasks = (web_text / "webtext.tasks.jsonl").read_bytes()
    assert tasks.count(b"\n") == len(TASKS) == len(tasks.decode().splitlines())
    checked = invoke("check", web_text, "--no-cache")
    assert checked.exit_code == 0, checked.output
    module = load_module(web_text / "webtext.py")
    rows = module.build_dataset()
    assert [{"text": r["text"], "crlf": r["crlf"], "n": r["n"]} for r in rows] == TASKS


def _reseal(out, data: bytes) -> None:
    """What a pull request can do: new tasks-file bytes, the interface sealed over their hash, and
    the module's recorded hash of the interface edited to match (`generate` would refuse)."""
    (out / "webtext.tasks.jsonl").write_bytes(data)
    interface = out / "webtext.snapshot.json"
    body = json.loads(interface.read_text())
    old = body.pop("sha256")
    body["tasks_sha256"] = hashlib.sha256(data).hexdigest()
    body["sha256"] = hashlib.sha256(snapshot_model._dumps(body).encode()).hexdigest()
    interface.write_text(snapshot_model._dumps(body))
    module = out / "webtext.py"
    module.write_text(module.read_text().replace(old, body["sha256"]))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "cause"),
    [
        (lambda t: t.replace("\n", "\r\n"), "line 1: holds a carriage return (CRLF line ends?)"),
        (lambda t: t.replace("}\n{", "}, {", 1), "line 1: not one JSON row"),
        (lambda t: t.replace("}\n{", "}\x1e{", 1), "line 1: holds a raw line separator U+001E"),
        (lambda t: t.replace("}\n{", "}\u2028{", 1), "line 1: holds a raw line separator U+2028"),
        (lambda t: t.replace("\\u2028", "\u2028"), "holds a raw line separator U+2028"),
    ],
    ids=["crlf", "two-rows-one-line", "record-separator", "u2028-between", "raw-u2028-inside"],
)
def test_check_and_build_dataset_agree_on_a_resealed_tasks_file(web_text, tmp_path, edit, cause):
    out = Path(shutil.copytree(web_text, tmp_path / "generated"))
    _reseal(out, edit((out / "webtext.tasks.jsonl").read_bytes().decode()).encode())
    checked = invoke("check", out, "--no-cache")
    assert checked.exit_code == 1, checked.output
    finding = [line for line in checked.stdout.splitlines() if line.startswith(f"{out / 'webtext.snapshot.json'}: ")]
    assert len(finding) == 1 and cause in finding[0] and "webtext.tasks.jsonl" in finding[0], checked.output
    module = load_module(out / "webtext.py")
    with pytest.raises(DatasetError) as caught:
        module.build_dataset()
    assert cause in str(caught.value) and "\n" not in str(caught.value)


def test_check_names_a_tasks_file_beside_a_format_1_snapshot_that_differs_in_one_line(tmp_path):
    """A format-1 snapshot holds its tasks inline; a tasks file beside it with other bytes (here
    CRLF line ends) is drift `check` names in one line, never a traceback."""
    gen = Path(
        shutil.copytree(REPO / "generated", tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    )
    path = gen / "echo.snapshot.json"
    current = snapshot_model.load(path)
    body = current.ordered().model_copy(update={"format_version": 1}).model_dump(exclude={"sha256"})
    body["sha256"] = hashlib.sha256(snapshot_model._dumps(body).encode()).hexdigest()
    path.write_text(snapshot_model._dumps(body))
    tasks = gen / "echo.tasks.jsonl"
    tasks.write_bytes(tasks.read_bytes().replace(b"\n", b"\r\n"))
    result = invoke("check", gen, "--no-cache")
    assert result.exit_code == 1 and not isinstance(result.exception, AssertionError), result.output
    assert f"{tasks}: not what orlgen writes from its snapshot: line 1 differs" in result.stdout
