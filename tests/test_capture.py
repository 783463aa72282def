"""`orlgen.capture.live` and `orlgen snapshot` against real ORS servers on loopback ports.

Every server here is the real `openreward` server serving a real `Environment` subclass in a
child process: the examples (`echo_url`, `helpdesk_url` from conftest) and the small envs of
`tests/support/envs/capture_shapes.py`. Fault injection happens inside those env classes (their docstrings say
so), never by mocking the SDK.
"""

from __future__ import annotations

import json
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from orlgen.capture.live import CaptureError, CaptureOptions, capture
from orlgen.capture.sampling import SAMPLE_SIZE
from orlgen.runtime.session.connection import Connection
from orlgen.serve import ServerProcess
from orlgen.snapshot import model as snapshot_mod
from orlgen.snapshot.model import TaskRef

from examples.echo import TARGETS
from examples.helpdesk import SPLIT_SIZES, Helpdesk
from tests.support.cli import invoke, run_orlgen
from tests.support.envs import capture_shapes as support_envs

REPO = Path(__file__).resolve().parent.parent
SUPPORT_ENVS = ("RangeRefused", "LargeIndexed", "ConflictingTaskTool")
HELPDESK_TOOLS = {
    "list_policies",
    "search_orders",
    "get_order",
    "update_shipping",
    "issue_refund",
    "cancel_order",
    "send_reply",
    "submit_resolution",
    "escalate",
}


@pytest.fixture(scope="module")
def urls(request):
    """Base URLs of every server this module uses, keyed by env class name.

    The support servers start in parallel with the conftest session servers (each child spends
    seconds importing the SDK), which keeps this module's wall time down.
    """
    servers = {name: ServerProcess(f"tests.support.envs.capture_shapes:{name}") for name in SUPPORT_ENVS}
    try:
        with ThreadPoolExecutor(len(servers)) as pool:
            started = [pool.submit(server.start) for server in servers.values()]
            found = {"Echo": request.getfixturevalue("echo_url"), "Helpdesk": request.getfixturevalue("helpdesk_url")}
            for future in started:
                future.result()
        found.update({name: server.url for name, server in servers.items()})
        yield found
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def echo(urls):
    """The echo env captured through its URL with default options."""
    return capture(urls["Echo"])


@pytest.fixture(scope="module")
def helpdesk(urls):
    """The helpdesk env captured through its URL with default options."""
    return capture(urls["Helpdesk"])


def _jsonable(value):
    return json.loads(json.dumps(value))


def _types(schema: dict) -> set[str]:
    """The JSON types a (possibly anyOf/oneOf) schema admits."""
    found: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        found.add(declared)
    elif isinstance(declared, list):
        found.update(declared)
    for key in ("anyOf", "oneOf"):
        for option in schema.get(key, []):
            found |= _types(option)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cli_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "OPENREWARD_LOG_LEVEL": "WARNING", "OPENREWARD_DISABLE_UPDATE_CHECK": "1"}
    env.update(extra)
    return env


# --------------------------------------------------------------------------------------------
# echo: URL and module targets, task-only tools
# --------------------------------------------------------------------------------------------


def test_echo_by_url_and_by_module_differ_only_in_target_and_deployment(urls, echo):
    by_url = echo
    by_module = capture("examples.echo:Echo")

    assert by_url.target.kind == "url" and by_url.target.value == urls["Echo"] and by_url.target.env == "echo"
    assert by_module.target.kind == "module" and by_module.target.value == "examples.echo:Echo"
    assert by_module.target.env == "echo"
    assert by_url.name == by_module.name == "echo"
    exclude = {"target", "deployment", "sha256"}
    assert by_url.model_dump(exclude=exclude) == by_module.model_dump(exclude=exclude)
    # a URL's server reports its deployment (no build SHA here); a module target is served by this SDK
    assert by_url.deployment.sdk_version and by_url.deployment.build_sha is None and by_module.deployment is None
    # the hash covers the target, so the two snapshots are told apart
    assert by_url.sha256 != by_module.sha256
    # and what was captured is the env's content
    assert [t.spec["target"] for t in by_url.tasks["train"].tasks] == TARGETS
    assert by_url.tasks["train"].coverage == "all"


def test_task_only_hint_is_recorded_on_the_even_probed_tasks(echo):
    captured = echo
    tools = {tool.name: tool for tool in captured.tools}
    assert set(tools) == {"echo", "hint"}
    assert tools["echo"].shared is True and tools["echo"].offered_on == []
    assert tools["hint"].shared is False
    assert tools["hint"].input_schema is None

    probed = captured.probed_tasks
    assert len(probed) == 3 and len(set(probed)) == 3
    assert all(ref.split == "train" and 0 <= ref.index < len(TARGETS) for ref in probed)
    # the default probes hit both kinds of task, so the check below can tell them apart
    assert {ref.index % 2 for ref in probed} == {0, 1}
    assert tools["hint"].offered_on == [ref for ref in probed if ref.index % 2 == 0]


def test_probing_every_task_finds_every_task_offering_hint(urls):
    captured = capture(urls["Echo"], CaptureOptions(probes=len(TARGETS)))
    assert captured.probed_tasks == [TaskRef(split="train", index=i) for i in range(len(TARGETS))]
    hint = next(tool for tool in captured.tools if tool.name == "hint")
    assert hint.offered_on == [TaskRef(split="train", index=i) for i in range(0, len(TARGETS), 2)]


# --------------------------------------------------------------------------------------------
# helpdesk: the realistic env
# --------------------------------------------------------------------------------------------


def test_helpdesk_tools(helpdesk):
    tools = {tool.name: tool for tool in helpdesk.tools}
    assert set(tools) == HELPDESK_TOOLS and len(helpdesk.tools) == 9
    assert [name for name, tool in tools.items() if not tool.shared] == ["escalate"]
    assert all(tool.offered_on == [] for tool in tools.values() if tool.shared)
    assert tools["submit_resolution"].input_schema["required"] == ["summary", "resolved"]
    assert tools["list_policies"].input_schema is None

    # `escalate` is offered exactly on the probed VIP tickets
    escalate = tools["escalate"]
    assert escalate.input_schema["properties"]["priority"]["maximum"] == 3
    specs = {(split, task.index): task.spec for split, st in helpdesk.tasks.items() for task in st.tasks}
    vip = [ref for ref in helpdesk.probed_tasks if specs[(ref.split, ref.index)]["customer"]["tier"] == "vip"]
    assert vip, "the probes should reach at least one VIP ticket"
    assert escalate.offered_on == vip
    assert len(helpdesk.probed_tasks) == 6  # three probes in each of the two splits


def test_helpdesk_splits_and_every_task(helpdesk):
    assert {split.name: split.num_tasks for split in helpdesk.splits} == {"train": 300, "test": 60}
    assert set(helpdesk.tasks) == {"train", "test"}
    for split, size in SPLIT_SIZES.items():
        captured = helpdesk.tasks[split]
        assert captured.coverage == "all"
        assert [task.index for task in captured.tasks] == list(range(size))
        assert [task.spec for task in captured.tasks] == _jsonable(list(Helpdesk.list_tasks(split)))
    assert helpdesk.terminal_tool is None
    assert helpdesk.target.kind == "url" and helpdesk.target.env == "helpdesk" and helpdesk.name == "helpdesk"


def test_helpdesk_task_schema_types_sla_hours_as_integer_or_string(helpdesk):
    schema = helpdesk.task_schema
    assert schema["type"] == "object"
    assert _types(schema["properties"]["sla_hours"]) == {"integer", "string"}
    assert _types(schema["properties"]["opened_hours_ago"]) == {"integer"}
    assert {"ticket_id", "customer", "order", "expected", "sla_hours"} <= set(schema["properties"])


def test_tasks_none_captures_no_task(urls):
    captured = capture(urls["Helpdesk"], CaptureOptions(tasks="none"))
    assert {split.name: split.num_tasks for split in captured.splits} == {"train": 300, "test": 60}
    assert {split: (st.coverage, st.tasks) for split, st in captured.tasks.items()} == {
        "train": ("none", []),
        "test": ("none", []),
    }
    assert "escalate" in {tool.name for tool in captured.tools}  # probing still happens
    # tasks read as evidence for the task schema are not stored
    assert _types(captured.task_schema["properties"]["sla_hours"]) == {"integer", "string"}


def test_tasks_n_smaller_than_the_split_takes_a_sample(urls, helpdesk):
    size = 22
    captured = capture(urls["Helpdesk"], CaptureOptions(tasks=size, splits=("train",)))
    assert [split.name for split in captured.splits] == ["train"] and set(captured.tasks) == {"train"}
    sample = captured.tasks["train"]
    assert sample.coverage == "sample"
    indices = [task.index for task in sample.tasks]
    assert len(indices) == size, "--tasks N stores exactly N tasks"
    assert indices[: size // 2] == list(range(size // 2)), "the sample starts with a run from task 0"
    assert len(set(indices)) == len(indices) and indices == sorted(indices)
    assert indices[-1] == 299, "the sample should spread to the end of the split"
    full = {task.index: task.spec for task in helpdesk.tasks["train"].tasks}
    assert all(task.spec == full[task.index] for task in sample.tasks)


# --------------------------------------------------------------------------------------------
# unusual servers (tests/support/envs/capture_shapes.py)
# --------------------------------------------------------------------------------------------


def test_unsupported_task_range_falls_back_to_one_read_per_task(urls):
    """Fault injection: `RangeRefused.get_task_range` raises HTTPException(404), so the real
    server answers `/task_range` with 404, as one without the endpoint does. Capture must still
    read every task, one by one."""
    url = urls["RangeRefused"]
    # the fault is real: the SDK's own range read fails against this server
    connection = Connection(url=url, catalog=None, env="rangerefused", api_key=None)
    with pytest.raises(Exception, match="404"):
        connection.run(lambda env: env.get_task_range("train", 0, 2), timeout=30)

    captured = capture(url)
    for split, size in support_envs.RANGE_REFUSED_SIZES.items():
        assert captured.tasks[split].coverage == "all"
        assert [task.spec for task in captured.tasks[split].tasks] == [
            support_envs.range_refused_task(split, i) for i in range(size)
        ]
        assert [task.index for task in captured.tasks[split].tasks] == list(range(size))


def test_index_only_large_env_is_captured(urls):
    """`LargeIndexed.list_tasks` raises NotImplementedError; tasks come from num_tasks/get_task."""
    captured = capture(urls["LargeIndexed"])
    assert {split.name: split.num_tasks for split in captured.splits} == support_envs.LARGE_SIZES
    assert [tool.name for tool in captured.tools] == ["guess"]

    test_split = captured.tasks["test"]
    assert test_split.coverage == "all"
    assert [task.spec for task in test_split.tasks] == [support_envs.large_task("test", i) for i in range(40)]

    train = captured.tasks["train"]  # 2500 tasks: more than a default capture reads whole
    assert train.coverage == "sample"
    indices = [task.index for task in train.tasks]
    assert len(indices) == SAMPLE_SIZE and len(set(indices)) == SAMPLE_SIZE
    assert indices[: SAMPLE_SIZE // 2] == list(range(SAMPLE_SIZE // 2))
    assert all(task.spec == support_envs.large_task("train", task.index) for task in train.tasks)
    assert indices[-1] == 2499
    assert set(captured.task_schema["properties"]) == {"split", "index", "word", "level"}


def test_task_only_tool_with_two_schemas_is_refused(urls):
    """Fault injection: `ConflictingTaskTool` offers `lookup` with a string key on task 0 and an
    integer key on every other task."""
    with pytest.raises(CaptureError) as caught:
        capture(urls["ConflictingTaskTool"])
    message = str(caught.value)
    assert "'lookup'" in message
    assert "train[0]" in message and "train[1]" in message  # the first two probes: tasks 0 and 1
    assert "\n" not in message


def test_nothing_listening_fails_fast_with_one_line():
    url = f"http://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    with pytest.raises(CaptureError) as caught:
        capture(url)
    assert time.monotonic() - start < 5
    message = str(caught.value)
    assert url in message and "\n" not in message


# --------------------------------------------------------------------------------------------
# the `orlgen snapshot` command
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_snapshot_of_a_url_writes_snapshot_and_module(urls, tmp_path):
    out = tmp_path / "out"
    result = invoke("snapshot", urls["Echo"], "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["echo.py", "echo.snapshot.json", "echo.tasks.jsonl", "orlgen.lock"]

    written = snapshot_mod.load(out / "echo.snapshot.json")
    assert (out / "echo.snapshot.json").read_text() == written.to_json()
    assert written.target.kind == "url" and written.target.value == urls["Echo"]
    first_line = (out / "echo.py").read_text().splitlines()[0]
    assert first_line.startswith("# Code generated by orlgen ")
    assert f"from echo.snapshot.json (sha256 {written.sha256})" in first_line

    checked = invoke("check", str(out))
    assert checked.exit_code == 0, checked.output


def test_cli_snapshot_of_nothing_listening_exits_2(tmp_path):
    result = invoke("snapshot", f"http://127.0.0.1:{_free_port()}", "--out", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.startswith("orlgen: error: ") and result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_snapshot_with_zero_tasks_does_not_crash(urls, tmp_path):
    result = invoke("snapshot", urls["Echo"], "--tasks", "0", "--out", tmp_path)
    assert not isinstance(result.exception, ZeroDivisionError)
    assert result.exit_code in (0, 2), result.output


def test_cli_snapshot_of_a_bad_target_exits_2_with_one_line(tmp_path):
    result = run_orlgen("snapshot", "not-a-target", "--out", str(tmp_path), cwd=tmp_path, env=_cli_env(), timeout=60)
    assert result.returncode == 2
    assert result.stderr.startswith("orlgen: error: ")
    assert result.stderr.count("\n") == 1 and "not-a-target" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_cli_snapshot_of_a_module_target_prints_only_its_own_lines(tmp_path):
    env = {key: value for key, value in _cli_env().items() if key != "OPENREWARD_LOG_LEVEL"}
    result = run_orlgen(
        "snapshot",
        "examples.echo:Echo",
        "--out",
        str(tmp_path),
        "--tasks",
        "none",
        "--no-generate",
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"wrote {tmp_path / 'echo.snapshot.json'} (2 tools; tasks stored: train 0/8)"]
    assert result.stderr == ""


@pytest.mark.slow
def test_cli_snapshot_of_a_catalog_name_records_no_secret(urls, tmp_path):
    """A local echo server stands in for the platform: the SDK's API and session URLs point to it."""
    secret = "test-key"
    env = _cli_env(OPENREWARD_API_KEY=secret, OPENREWARD_SESSION_URL=urls["Echo"], OPENREWARD_API_URL=urls["Echo"])
    result = run_orlgen("snapshot", "Acme/Echo", "--out", "out", cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "acme_echo.py",
        "acme_echo.snapshot.json",
        "acme_echo.tasks.jsonl",
        "orlgen.lock",
    ]

    captured = snapshot_mod.load(out / "acme_echo.snapshot.json")
    assert captured.name == "acme_echo"
    assert captured.target.model_dump() == {"kind": "catalog", "value": "Acme/Echo", "env": "echo"}
    assert [t.spec["target"] for t in captured.tasks["train"].tasks] == TARGETS
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), f"{path} contains the API key"
    assert secret not in result.stdout + result.stderr


@pytest.mark.slow
def test_tasks_10_of_a_large_split_stores_exactly_10_and_the_first_5_build_offline(tmp_path):
    """`--tasks 10` on 2,500 tasks: tasks 0-4 and five spread to the end; with the server gone,
    `build_dataset(num_tasks=5)` still works (no request), and num_tasks=6 needs the server."""
    from orlgen.render.jobs import generate
    from orlgen.review.files import write_files

    from tests.support.modules import load_module

    with ServerProcess("tests.support.envs.capture_shapes:LargeIndexed") as server:
        captured = capture(server.url, CaptureOptions(tasks=10, probes=0))
    train = captured.tasks["train"]
    indices = [task.index for task in train.tasks]
    assert train.coverage == "sample" and len(indices) == 10 == len(set(indices))
    assert indices[:5] == [0, 1, 2, 3, 4] and indices[-1] == 2499 and indices == sorted(indices)
    assert [task.index for task in captured.tasks["test"].tasks] == [0, 1, 2, 3, 4, 14, 15, 26, 27, 39]

    path = tmp_path / captured.file_name
    write_files(captured.files(path))
    write_files(generate([(path, captured)]))
    module = load_module(tmp_path / "largeindexed.py")
    dataset = module.build_dataset("train", num_tasks=5)  # the server is stopped: no request possible
    assert dataset["task_index"] == [0, 1, 2, 3, 4]
    assert dataset["word"] == [support_envs.large_task("train", i)["word"] for i in range(5)]
    with pytest.raises(Exception):  # noqa: B017 - any failure: the point is that a request was needed
        module.build_dataset("train", num_tasks=6)
