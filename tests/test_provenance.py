"""Which deployment a snapshot came from: the SDK version and build SHA an ORS server reports at
`/version` (its deployment sets `OPENREWARD_BUILD_SHA`). Real echo servers, restarted on the same
port with another build: `snapshot --check` and the adapter's drift guard both say "same schema,
new deployment", and neither calls it drift."""

from __future__ import annotations

import logging

import pytest
from orlgen.runtime.ors import provenance
from orlgen.serve import ServerProcess
from orlgen.snapshot import model as snapshot_mod

from tests.support.cli import invoke
from tests.support.modules import REPO, load_module


@pytest.fixture
def redeployed(monkeypatch, tmp_path):
    """Capture the echo env served as build aaa111 into tmp_path, then serve build bbb222 on the
    same port; yields the URL and the output directory."""
    monkeypatch.setenv("OPENREWARD_BUILD_SHA", "aaa111")
    with ServerProcess("examples.echo:Echo") as first:
        url, port = first.url, first.port
        result = invoke("snapshot", url, "--out", str(tmp_path), "--tasks", "none")
        assert result.exit_code == 0, result.output
    monkeypatch.setenv("OPENREWARD_BUILD_SHA", "bbb222")
    with ServerProcess("examples.echo:Echo", port=port):
        yield url, tmp_path


@pytest.mark.slow
def test_a_url_capture_records_the_deployment_and_check_notes_a_new_one(redeployed):
    url, out = redeployed
    recorded = snapshot_mod.load(out / "echo.snapshot.json").deployment
    assert recorded.build_sha == "aaa111" and recorded.sdk_version  # the SDK version the server runs
    result = invoke("snapshot", url, "--out", str(out), "--tasks", "none", "--check")
    assert result.exit_code == 0, result.output
    assert f"{out / 'echo.snapshot.json'}: same schema, new deployment (build aaa111 → bbb222)" in result.output


@pytest.mark.slow
def test_the_drift_guard_logs_a_new_deployment_of_the_same_tools(redeployed, caplog, monkeypatch):
    url, out = redeployed
    monkeypatch.setattr("orlgen.runtime.episode._drift_checked", {})
    module = load_module(out / "echo.py")
    assert module.EchoEnv.spec.deployment["build_sha"] == "aaa111"
    env = module.EchoEnv(base_url=url)
    with caplog.at_level(logging.WARNING, logger="orlgen"):
        env.reset(task_index=0)
    env.get_reward()
    [record] = [r for r in caplog.records if "deployment" in r.message]
    assert "same schema, new deployment of the environment (build aaa111 → bbb222)" in record.message
    assert "differ from the snapshot" not in caplog.text


def test_a_module_target_records_no_deployment_so_checked_in_snapshots_keep_their_bytes():
    from orlgen.capture.live import capture

    captured = capture("examples.echo:Echo")
    assert captured.deployment is None and '"deployment"' not in captured.to_json()  # absent, not null
    assert captured.to_json() == (REPO / "generated" / "echo.snapshot.json").read_text()


def test_what_the_server_says_is_kept_only_when_it_looks_like_a_version():
    assert provenance.parse({"version": "0.1.167", "build_sha": None}) == {"sdk_version": "0.1.167"}
    assert provenance.parse({"version": "x\n`rm -rf`", "build_sha": "a" * 200}) is None
    assert provenance.parse(["not", "a", "mapping"]) is None
    assert provenance.changed({"build_sha": "a1"}, {"build_sha": "a1", "sdk_version": "9"}) is None
