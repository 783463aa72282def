"""The snapshot file: canonical JSON, its content hash, and `load`'s one-line errors."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from orlgen.snapshot import model as snapshot
from orlgen.snapshot.model import Snapshot, SnapshotError, Split, SplitTasks, Task, TaskRef, Tool, load

REPO = Path(__file__).resolve().parent.parent
ECHO = REPO / "generated" / "echo.snapshot.json"
ECHO_TASKS = REPO / "generated" / "echo.tasks.jsonl"


@pytest.fixture(scope="module")
def echo() -> Snapshot:
    return snapshot.load(ECHO)


@pytest.fixture(scope="module")
def rich(echo: Snapshot) -> Snapshot:
    """echo plus a second split and a second task-only tool, so that every list has several
    entries to reorder: splits, tools, each tool's `offered_on`, probed tasks, each split's tasks."""
    test_tasks = [Task(index=i, spec={"target": word, "offers_hint": i % 2 == 0}) for i, word in enumerate("abcd")]
    reveal = Tool(
        name="reveal",
        description="Reveal the answer.",
        input_schema={"type": "object", "properties": {"how": {"type": "string"}}},
        shared=False,
        offered_on=[TaskRef(split="test", index=2), TaskRef(split="train", index=0), TaskRef(split="test", index=0)],
    )
    return echo.model_copy(
        update={
            "splits": [*echo.splits, Split(name="test", num_tasks=4)],
            "tools": [*echo.tools, reveal],
            "probed_tasks": [*echo.probed_tasks, TaskRef(split="test", index=0), TaskRef(split="test", index=2)],
            "tasks": {**echo.tasks, "test": SplitTasks(coverage="all", tasks=test_tasks)},
        }
    ).canonical()


def shuffled(base: Snapshot, seed: int) -> Snapshot:
    """The same content with every list (and the split → tasks mapping) in another order."""
    rng = random.Random(seed)

    def mix(items):
        items = list(items)
        original = list(items)
        rng.shuffle(items)
        if items == original:
            items.reverse()
        return items

    tools = [tool.model_copy(update={"offered_on": mix(tool.offered_on)}) for tool in base.tools]
    tasks = {split: st.model_copy(update={"tasks": mix(st.tasks)}) for split, st in base.tasks.items()}
    return base.model_copy(
        update={
            "splits": mix(base.splits),
            "tools": mix(tools),
            "probed_tasks": mix(base.probed_tasks),
            "tasks": dict(mix(tasks.items())),
        }
    )


# --------------------------------------------------------------------------------------------
# canonical JSON
# --------------------------------------------------------------------------------------------


def test_checked_in_snapshot_is_canonical_json(echo: Snapshot):
    text = ECHO.read_text(encoding="utf-8")
    assert echo.to_json() == text
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_reordered_content_serialises_to_identical_bytes(rich: Snapshot, seed: int):
    mixed = shuffled(rich, seed)
    # the reordering is real ...
    assert [s.name for s in mixed.splits] != [s.name for s in rich.splits]
    assert [t.name for t in mixed.tools] != [t.name for t in rich.tools]
    assert list(mixed.tasks) != list(rich.tasks)
    # ... and invisible in the canonical form
    assert mixed.to_json().encode() == rich.to_json().encode()
    assert mixed.canonical() == rich
    assert mixed.canonical().sha256 == rich.sha256


def test_canonical_order(rich: Snapshot):
    data = json.loads(shuffled(rich, 1).to_json())
    assert [s["name"] for s in data["splits"]] == ["test", "train"]
    assert [t["name"] for t in data["tools"]] == ["echo", "hint", "reveal"]
    assert data["tasks"] == {"test": {"coverage": "all", "stored": 4}, "train": {"coverage": "all", "stored": 8}}
    rows = [
        json.loads(line)
        for line in shuffled(rich, 1).files(Path("echo.snapshot.json"))[Path("echo.tasks.jsonl")].splitlines()
    ]
    assert [(row["split"], row["index"]) for row in rows] == [("test", i) for i in range(4)] + [
        ("train", i) for i in range(8)
    ]
    assert list(data["tasks"]) == ["test", "train"]
    reveal = data["tools"][2]
    assert [(r["split"], r["index"]) for r in reveal["offered_on"]] == [("test", 0), ("test", 2), ("train", 0)]
    probed = [(r["split"], r["index"]) for r in data["probed_tasks"]]
    assert probed == sorted(probed)


def test_canonical_is_idempotent_and_round_trips_through_a_file(rich: Snapshot, tmp_path: Path):
    assert rich.canonical() == rich
    assert rich.canonical().to_json() == rich.to_json()
    path = tmp_path / rich.file_name
    for file, data in rich.files(path).items():
        file.write_bytes(data)
    assert sorted(file.name for file in tmp_path.iterdir()) == ["echo.snapshot.json", "echo.tasks.jsonl"]
    assert snapshot.load(path) == rich


# --------------------------------------------------------------------------------------------
# sha256
# --------------------------------------------------------------------------------------------


def test_sha256_is_the_hash_of_the_canonical_content_without_it(echo: Snapshot):
    body = json.loads(echo.to_json())
    recorded = body.pop("sha256")
    recomputed = hashlib.sha256(
        (json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    ).hexdigest()
    assert recorded == recomputed == echo.sha256
    # a stale or forged `sha256` field is never trusted by canonical()
    assert echo.model_copy(update={"sha256": "0" * 64}).canonical().sha256 == echo.sha256


def _edit_one_task(s: Snapshot) -> Snapshot:
    train = s.tasks["train"]
    first = train.tasks[0].model_copy(update={"spec": {**train.tasks[0].spec, "target": "HELLO"}})
    return s.model_copy(
        update={"tasks": {**s.tasks, "train": train.model_copy(update={"tasks": [first, *train.tasks[1:]]})}}
    )


def _edit_description(s: Snapshot) -> Snapshot:
    return s.model_copy(update={"tools": [s.tools[0].model_copy(update={"description": "Echo."}), *s.tools[1:]]})


def _edit_offered_on(s: Snapshot) -> Snapshot:
    hint = next(t for t in s.tools if t.name == "hint")
    others = [t for t in s.tools if t.name != "hint"]
    return s.model_copy(update={"tools": [*others, hint.model_copy(update={"offered_on": hint.offered_on[:-1]})]})


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(_edit_one_task, id="one-task-spec"),
        pytest.param(_edit_description, id="tool-description"),
        pytest.param(_edit_offered_on, id="offered-on"),
        pytest.param(lambda s: s.model_copy(update={"splits": [Split(name="train", num_tasks=9)]}), id="num-tasks"),
        pytest.param(
            lambda s: s.model_copy(update={"target": s.target.model_copy(update={"value": "x:Y"})}), id="target"
        ),
        pytest.param(lambda s: s.model_copy(update={"task_schema": {}}), id="task-schema"),
        pytest.param(lambda s: s.model_copy(update={"probed_tasks": s.probed_tasks[1:]}), id="probed-tasks"),
    ],
)
def test_sha256_changes_with_any_content(echo: Snapshot, edit):
    edited = edit(echo).canonical()
    assert edited.to_json() != echo.to_json()
    assert edited.sha256 != echo.sha256
    assert len(edited.sha256) == 64 and int(edited.sha256, 16) >= 0


# --------------------------------------------------------------------------------------------
# load: every problem is a one-line SnapshotError naming the file
# --------------------------------------------------------------------------------------------


def _load_error(path: Path) -> str:
    with pytest.raises(SnapshotError) as caught:
        snapshot.load(path)
    message = str(caught.value)
    assert str(path) in message, message
    assert "\n" not in message, message
    return message


def _write(tmp_path: Path, data: object, name: str = "echo.snapshot.json") -> Path:
    """An interface file, with echo's tasks file beside it."""
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")
    snapshot.tasks_path(path).write_bytes(ECHO_TASKS.read_bytes())
    return path


def test_load_rejects_a_file_that_is_not_json(tmp_path: Path):
    message = _load_error(_write(tmp_path, '{"format_version": 1,\n  "name": echo\n}\n'))
    assert "not valid JSON" in message and "line 2" in message


def test_load_rejects_an_empty_file(tmp_path: Path):
    assert "not valid JSON" in _load_error(_write(tmp_path, ""))


@pytest.mark.parametrize("field", ["name", "target", "tools", "tasks", "task_schema"])
def test_load_rejects_json_missing_a_required_field(tmp_path: Path, field: str):
    data = json.loads(ECHO.read_text())
    del data[field]
    message = _load_error(_write(tmp_path, data))
    assert "not a valid snapshot" in message
    assert f": {field}: Field required" in message


def test_load_names_a_missing_nested_field(tmp_path: Path):
    data = json.loads(ECHO.read_text())
    del data["tools"][1]["description"]
    message = _load_error(_write(tmp_path, data))
    assert "tools.1.description" in message and "required" in message


def _set(key, value):
    def edit(data: dict) -> dict:
        data[key] = value
        return data

    return edit


def _duplicate_first_tool(data: dict) -> dict:
    data["tools"].append(data["tools"][0])
    return data


@pytest.mark.parametrize(
    "edit, expected",
    [
        pytest.param(lambda data: [data], "top level", id="not-an-object"),
        pytest.param(
            _set("unexpected_field", 1), "unexpected_field: Extra inputs are not permitted", id="unknown-field"
        ),
        pytest.param(_set("format_version", 3), "format_version 3 is not supported", id="format-version"),
        pytest.param(_set("splits", "train"), "splits: ", id="wrong-type"),
        pytest.param(_duplicate_first_tool, "two tools share one name", id="duplicate-tool"),
    ],
)
def test_load_rejects_an_invalid_snapshot(tmp_path: Path, edit, expected: str):
    message = _load_error(_write(tmp_path, edit(json.loads(ECHO.read_text()))))
    assert "not a valid snapshot" in message and expected in message


def test_load_rejects_content_edited_by_hand(tmp_path: Path):
    text = ECHO.read_text()
    assert '"num_tasks": 8' in text
    message = _load_error(_write(tmp_path, text.replace('"num_tasks": 8', '"num_tasks": 9')))
    assert "sha256 does not match the content" in message and "edited by hand" in message


def test_load_rejects_a_tasks_file_edited_by_hand_naming_it(tmp_path: Path):
    path = _write(tmp_path, ECHO.read_text())
    tasks = snapshot.tasks_path(path)
    tasks.write_text(tasks.read_text().replace('"target": "hello"', '"target": "hullo"'))
    with pytest.raises(
        SnapshotError, match=r"echo\.tasks\.jsonl: sha256 does not match the one echo.snapshot.json records"
    ):
        snapshot.load(path)


def test_load_rejects_a_missing_tasks_file_naming_it(tmp_path: Path):
    path = _write(tmp_path, ECHO.read_text())
    snapshot.tasks_path(path).unlink()
    with pytest.raises(
        SnapshotError, match=r"echo\.tasks\.jsonl: cannot read the tasks file echo.snapshot.json records"
    ):
        snapshot.load(path)


def test_a_tasks_file_must_be_canonical_even_under_a_matching_hash(tmp_path: Path, echo: Snapshot):
    """A repeated key (a reviewer reads one value, orlgen the other) sealed by a recomputed hash."""
    path = _write(tmp_path, ECHO.read_text())
    tasks = snapshot.tasks_path(path)
    edited = tasks.read_text().replace('"target": "hello"', '"target": "hullo", "target": "hello"', 1)
    tasks.write_text(edited)
    digest = hashlib.sha256(edited.encode()).hexdigest()
    resealed = echo.model_copy(update={"tasks_sha256": digest})
    resealed = resealed.model_copy(update={"sha256": snapshot._interface_hash(resealed)})
    path.write_text(resealed.interface_text())
    with pytest.raises(
        SnapshotError, match=r"echo\.tasks\.jsonl: not a valid tasks file: line 1: not what orlgen writes"
    ):
        snapshot.load(path)


def test_a_format_1_snapshot_still_loads_as_the_same_content(tmp_path: Path, echo: Snapshot):
    """One file, the tasks inline, sealed by the hash of the whole (what orlgen wrote before the
    split): it loads, in the current format, with its tasks."""
    body = echo.ordered().model_copy(update={"format_version": 1}).model_dump(exclude={"sha256"})
    text = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    body["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    path = tmp_path / "echo.snapshot.json"
    path.write_text(json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    loaded = snapshot.load(path)
    assert loaded == echo and loaded.format_version == 2
    assert loaded.tasks["train"].tasks == echo.tasks["train"].tasks


def test_load_rejects_a_snapshot_without_its_hash(tmp_path: Path):
    data = json.loads(ECHO.read_text())
    del data["sha256"]
    assert "sha256 does not match" in _load_error(_write(tmp_path, data))


def test_load_accepts_any_key_and_list_order_when_the_hash_matches(tmp_path: Path, echo: Snapshot):
    data = echo.interface()
    data["probed_tasks"].reverse()
    text = json.dumps(dict(reversed(list(data.items()))))
    assert snapshot.load(_write(tmp_path, text)).canonical() == echo


def test_load_reports_a_missing_file(tmp_path: Path):
    message = _load_error(tmp_path / "nowhere.snapshot.json")
    assert "cannot read snapshot" in message and "No such file or directory" in message


def test_load_reports_a_directory(tmp_path: Path):
    path = tmp_path / "dir.snapshot.json"
    path.mkdir()
    assert "cannot read snapshot" in _load_error(path)


def test_load_rejects_a_file_that_is_not_utf8(tmp_path: Path):
    path = _write(tmp_path, "")
    path.write_bytes(ECHO.read_bytes().replace(b'"echo"', b'"\xffcho"'))
    _load_error(path)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_load_refuses_non_standard_json_constants_even_when_the_seal_holds(tmp_path: Path, constant: str):
    """A constant written where the snapshot had null, under the seal of the null version (the
    seal pydantic's NaN-as-null dump once let it keep): refused before the seal is even read."""
    echo = load(ECHO)
    assert echo.tools[1].input_schema is None
    tools = [echo.tools[0], echo.tools[1].model_copy(update={"input_schema": {"default": None}})]
    text = echo.model_copy(update={"tools": tools}).to_json().replace('"default": null', f'"default": {constant}', 1)
    message = _load_error(_write(tmp_path, text))
    assert f"not valid JSON: {constant} is not a JSON value" in message
    data = echo.model_dump()
    data["tools"][1]["input_schema"] = {"default": float(constant.replace("Infinity", "inf"))}
    with pytest.raises(ValueError, match="non-finite"):  # nor can the model hold one, so nothing seals it
        Snapshot.model_validate(data)


def test_a_lone_surrogate_is_recorded_as_an_escape(tmp_path: Path):
    """A server may send `\\ud800`, which has no UTF-8 form: the snapshot keeps it as the JSON
    escape (the file stays UTF-8, the record faithful), and an unsealed edit is one line."""
    snapshot = load(ECHO)
    tasks = snapshot.tasks["train"].model_copy(
        update={
            "tasks": [
                task.model_copy(update={"spec": {**task.spec, "target": "x\ud800"}})
                for task in snapshot.tasks["train"].tasks
            ]
        }
    )
    path = tmp_path / "echo.snapshot.json"
    files = snapshot.model_copy(update={"tasks": {"train": tasks}}).files(path)
    for file, data in files.items():
        file.write_bytes(data)
    text = path.with_name("echo.tasks.jsonl").read_bytes().decode("utf-8")
    assert '"x\\ud800"' in text
    assert load(path).tasks["train"].tasks[0].spec["target"] == "x\ud800"
    unsealed = ECHO_TASKS.read_text().replace('"target": "hello"', '"target": "\\ud800"')
    edited = _write(tmp_path, ECHO.read_text())
    edited.with_name("echo.tasks.jsonl").write_text(unsealed)
    with pytest.raises(SnapshotError, match=r"echo\.tasks\.jsonl: sha256 does not match"):
        load(edited)


def test_load_refuses_a_number_that_overflows_to_infinity(tmp_path: Path):
    text = ECHO.read_text().replace('"input_schema": null', '"input_schema": {"maximum": 1e400}', 1)
    assert "1e400 is out of range for a float" in _load_error(_write(tmp_path, text))


def test_load_refuses_a_key_given_twice(tmp_path: Path):
    """JSON readers keep the last of two equal keys; a reviewer may read the first."""
    text = ECHO.read_text().replace('"name": "echo",', '"name": "echo",\n  "name": "echo",', 1)
    assert "the key 'name' appears twice in one object" in _load_error(_write(tmp_path, text))


def test_load_turns_unreadable_json_into_one_line(tmp_path: Path):
    too_long = ECHO.read_text().replace('"num_tasks": 8', '"num_tasks": ' + "9" * 5000, 1)
    assert "not valid JSON" in _load_error(_write(tmp_path, too_long))
    assert "nested deeper" in _load_error(_write(tmp_path, "[" * 100_000))
