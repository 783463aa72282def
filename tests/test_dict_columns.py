"""Dict task fields whose keys vary between tasks reach the dataset exactly as the env gave them.

Arrow gives a struct column one set of keys: stored as a struct, a task's dict would gain, as None,
every key another task's dict has. Such fields are JSON text instead; a dict of one fixed shape
stays a struct.
"""

from __future__ import annotations

import ast
import json

import pyarrow.parquet as pq
import pytest
from orlgen.plan.columns import dataset_columns
from orlgen.runtime import DatasetError
from orlgen.runtime.data.dataset import build
from orlgen.schema import infer_task_schema, parse_schema

from tests.support.cli import invoke
from tests.support.envs.dataset_pantry import RECIPES
from tests.support.modules import load_module

TARGET = "tests.support.envs.dataset_pantry:Pantry"


@pytest.fixture(scope="module")
def pantry_module(tmp_path_factory):
    """The pantry env captured with `orlgen snapshot module:Class`, its module imported."""
    out = tmp_path_factory.mktemp("pantry")
    result = invoke("snapshot", TARGET, "--probes", "0", "--out", out)
    assert result.exit_code == 0, result.output
    return load_module(out / "pantry.py")


def _fields(module, row: dict) -> dict:
    """A dataset row's task fields, JSON text decoded where the module's columns say so."""
    fields = {}
    for column in module.SPEC.dataset.columns:
        value = row[column.name]
        fields[column.field] = json.loads(value) if column.as_json and value is not None else value
    return fields


def test_only_fields_of_no_fixed_shape_are_json_text():
    """Judged from the task schema a snapshot infers: `pantry` and `steps`' items have optional
    properties (keys some tasks lack), `chef`'s properties are on every task."""
    schema = parse_schema(infer_task_schema(RECIPES), "task schema")
    as_json = {ast.literal_eval(column.field): column.as_json for column in dataset_columns(schema)}
    assert as_json == {"chef": False, "pantry": True, "steps": True, "title": False}


@pytest.mark.slow
def test_rows_give_back_each_tasks_dicts_exactly(pantry_module):
    rows = pantry_module.build_dataset().to_list()
    assert [_fields(pantry_module, row) for row in rows] == RECIPES
    assert all(isinstance(row["chef"], dict) for row in rows)  # one fixed shape: still a struct


@pytest.mark.slow
def test_parquet_rows_give_back_each_tasks_dicts_exactly(pantry_module, tmp_path):
    """What skyrl trains from: the rows written with `.to_parquet` and read back by pyarrow."""
    path = tmp_path / "pantry.parquet"
    pantry_module.build_dataset().to_parquet(str(path))
    rows = pq.read_table(path).to_pylist()
    assert [_fields(pantry_module, row) for row in rows] == RECIPES


@pytest.fixture(scope="module")
def uncaptured_recording(tmp_path_factory):
    """The recording env (its `nested` field is `{"k": i}` on every task, a struct column)
    captured with `--tasks none`: every row is fetched live."""
    out = tmp_path_factory.mktemp("uncaptured")
    result = invoke("snapshot", "tests.support.envs.recording:Recording", "--tasks", "none", "--out", out)
    assert result.exit_code == 0, result.output
    return load_module(out / "recording.py")


@pytest.mark.slow
def test_live_dicts_of_another_shape_than_the_snapshots_are_refused_not_filled(uncaptured_recording):
    """Fault injection: a fetch whose `nested` dicts differ in keys, which the struct column the
    snapshot planned would fill with None. One line says so; no row is mangled."""

    def reshaped(split, start, stop):
        return [
            {"prompt": "p", "task_index": i, "mixed": 1, "nested": {"k": i, **({"extra": i} if i else {})}}
            for i in range(start, stop)
        ]

    with pytest.raises(DatasetError, match=r"^task field 'nested' holds dicts whose keys differ between tasks.*re-run"):
        build(uncaptured_recording.SPEC.dataset, reshaped, "train", 2, None)
    assert build(uncaptured_recording.SPEC.dataset, reshaped, "train", None, [1])["nested"] == [{"k": 1, "extra": 1}]
