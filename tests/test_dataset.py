"""build_dataset: rows from the snapshot without network, live batches for what it lacks."""

from __future__ import annotations

import dataclasses
import json

import pytest
from orlgen.capture.live import CaptureOptions, capture
from orlgen.render.jobs import generate
from orlgen.review.files import write_files
from orlgen.runtime import DatasetError
from orlgen.runtime.data.dataset import _runs, build

from tests.support.modules import REPO, load_module


def test_rows_come_from_the_snapshot_without_network(helpdesk_module, monkeypatch):
    # The module was captured from module:Class, which has no address: any fetch would raise.
    monkeypatch.delenv("ORLGEN_HELPDESK_URL", raising=False)
    data = helpdesk_module.build_dataset("test", num_tasks=5)
    assert data["task_index"] == [0, 1, 2, 3, 4]
    assert data["split"] == ["test"] * 5
    assert data["prompt"][0] == [{"role": "user", "content": ""}]
    assert data[0]["customer"]["tier"] in ("standard", "vip")
    assert len(helpdesk_module.build_dataset("train")) == 300


def test_field_of_varying_type_is_json_text(helpdesk_module):
    data = helpdesk_module.build_dataset("train")
    values = {json.loads(v) if v is not None else None for v in data["sla_hours"]}
    assert "none" in values and any(isinstance(v, int) for v in values)


def test_reserved_names_are_prefixed_not_dropped(recording_module):
    row = recording_module.build_dataset(indices=[3])[0]
    assert row["prompt"] == [{"role": "user", "content": ""}] and row["task_index"] == 3
    assert row["task_prompt"] == "p3" and row["task_task_index"] == 103
    assert row["mixed"] == "3" and recording_module.build_dataset(indices=[2])[0]["mixed"] == '"s2"'
    assert row["nested"] == {"k": 3}


@pytest.fixture(scope="module")
def uncaptured_module(tmp_path_factory):
    """The recording env captured with `--tasks none`: every row must be fetched live."""
    out = tmp_path_factory.mktemp("uncaptured")
    snapshot = capture("tests.support.envs.recording:Recording", CaptureOptions(tasks="none"))
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    write_files(generate([(path, snapshot)]))
    return load_module(out / "recording.py")


def test_missing_tasks_are_fetched_live(uncaptured_module, recording_module, recording_url):
    live = uncaptured_module.build_dataset(indices=[4, 1, 2], base_url=recording_url)
    captured = recording_module.build_dataset(indices=[4, 1, 2])
    assert live.to_list() == captured.to_list()


@pytest.mark.slow
def test_no_address_serves_the_module_target_for_live_rows(uncaptured_module, monkeypatch):
    """A `module:Class` target has no address: the rows come from the class, served locally."""
    monkeypatch.delenv("ORLGEN_RECORDING_URL", raising=False)
    assert uncaptured_module.build_dataset(num_tasks=2)["task_prompt"] == ["p0", "p1"]


def test_more_tasks_than_the_split_has_is_an_error(recording_module):
    with pytest.raises(DatasetError, match=r"^num_tasks=64, but split 'train' has 6 tasks: pass num_tasks=6 or less"):
        recording_module.build_dataset(num_tasks=64)


def test_address_from_environment_variable(uncaptured_module, recording_url, monkeypatch):
    monkeypatch.setenv("ORLGEN_RECORDING_URL", recording_url)
    assert uncaptured_module.build_dataset(num_tasks=2)["task_prompt"] == ["p0", "p1"]


def test_bad_requests_name_the_problem(recording_module):
    with pytest.raises(DatasetError, match="not both"):
        recording_module.build_dataset(num_tasks=1, indices=[0])
    with pytest.raises(DatasetError, match="out of range"):
        recording_module.build_dataset(indices=[6])
    with pytest.raises(DatasetError, match="unknown split 'dev'"):
        recording_module.build_dataset("dev")


def test_stale_snapshot_next_to_module_is_refused(recording_module, tmp_path):
    spec = recording_module.SPEC.dataset
    other = tmp_path / "recording.snapshot.json"
    other.write_text(spec.snapshot_file.read_text().replace(spec.snapshot_sha256, "0" * 64))
    stale = type(spec)(**{**spec.__dict__, "snapshot_file": other})
    with pytest.raises(DatasetError, match="run `orlgen generate`"):
        build(stale, lambda *_: [], "train", None, None)


def test_stored_tasks_come_from_the_tasks_file_checked_against_its_recorded_hash(recording_module, tmp_path):
    """The rows are read from `recording.tasks.jsonl`; a tasks file edited since is refused."""
    spec = recording_module.SPEC.dataset
    moved = tmp_path / "recording.snapshot.json"
    moved.write_bytes(spec.snapshot_file.read_bytes())
    tasks = spec.snapshot_file.with_name("recording.tasks.jsonl").read_text()
    (tmp_path / "recording.tasks.jsonl").write_text(tasks)
    relocated = dataclasses.replace(spec, snapshot_file=moved)
    assert build(relocated, lambda *_: pytest.fail("fetched a stored task"), "train", 2, None)["task_index"] == [0, 1]
    (tmp_path / "recording.tasks.jsonl").write_text(tasks.replace('"index": 1,', '"index": 1, ', 1))
    with pytest.raises(DatasetError, match=r"recording\.tasks\.jsonl: its sha256 does not match the one its snapshot"):
        build(relocated, lambda *_: [], "train", 2, None)


def test_live_tasks_that_break_the_columns_say_to_resnapshot(uncaptured_module):
    """Fault injection: a fetch returning a field whose type now varies (`nested`: object, then text)."""
    spec = uncaptured_module.SPEC.dataset

    def drifted(split, start, stop):
        return [
            {"prompt": "p", "task_index": i, "mixed": 1, "nested": {"k": i} if i else "flat"}
            for i in range(start, stop)
        ]

    with pytest.raises(DatasetError, match="re-run `orlgen snapshot`"):
        build(spec, drifted, "train", 2, None)


def test_fetches_are_batched_into_contiguous_runs():
    assert _runs([0, 1, 2, 5, 6, 9]) == [(0, 3), (5, 7), (9, 10)]
    assert _runs(list(range(1200))) == [(0, 500), (500, 1000), (1000, 1200)]


def test_generated_columns_are_listed_in_the_module():
    text = (REPO / "generated" / "helpdesk_models.py").read_text()  # helpdesk has three trainers: one models file
    assert 'Column(name="sla_hours", field="sla_hours", as_json=True)' in text
    assert 'Column(name="customer", field="customer", as_json=False)' in text
