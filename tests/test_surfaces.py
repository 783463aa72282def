"""ORS surfaces a capture and an adapter use (issue 30 items 1-6): probes that survive a failing
setup, toolsets, split types and group scoring recorded, `env_overrides` on the wire, 402 at
capture. Real ORS servers on loopback ports: the SDK's `Server`, under
`tests/support/servers/surfaces.py` (a middleware that records what each request asked for, and
answers 402 on demand: fault injection, said so there)."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path
from typing import ClassVar

import pytest
from orlgen.capture.toolsets import TOOLSETS
from orlgen.review.diff import diff
from orlgen.runtime.session import backoff
from orlgen.serve import ServerProcess
from orlgen.snapshot.model import load

from tests.support.cli import invoke
from tests.support.modules import load_module

pytestmark = pytest.mark.slow  # each starts an ORS server (or imports the SDK): seconds apiece

REPO = Path(__file__).resolve().parent.parent
SURFACES = "tests.support.servers.surfaces"


@pytest.fixture
def surface_log(tmp_path, monkeypatch) -> Path:
    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv("ORLGEN_SURFACE_LOG", str(log))
    return log


def requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_setup_that_fails_offline_still_captures_every_tool_with_one_line(tmp_path):
    """A sandbox env whose sandbox cannot be reached: `/task_tools` is asked before setup, so the
    task-only tool is found; the failing `/messages` leaves the conversation unknown, in one line."""
    with ServerProcess("tests.support.envs.sandboxed:Sandboxed") as server:
        result = invoke("snapshot", server.url, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    snapshot = load(tmp_path / "sandboxed.snapshot.json")
    assert {tool.name: tool.shared for tool in snapshot.tools} == {"run": True, "submit_patch": False}
    assert [ref.index for ref in snapshot.tools[1].offered_on] == [0, 1, 2]  # every probe listed it
    assert not snapshot.conversation
    warning = result.stderr.splitlines()
    assert len(warning) == 1, result.stderr
    assert warning[0].startswith(
        f"orlgen: warning: {server.url}: setup failed on task train[0] (and 2 other probes): the server answered "
        "500: ConnectionError: cannot reach the sandbox service at 127.0.0.1:9; every tool was listed"
    )


def test_the_toolsets_offered_are_the_sdks():
    from openreward.api.environments.client import _VALID_BUILTIN_TOOLSETS

    assert set(TOOLSETS) == _VALID_BUILTIN_TOOLSETS


def test_a_toolset_is_recorded_shown_diffed_and_opened_by_the_adapter(tmp_path, surface_log):
    with ServerProcess("examples.echo:Echo", entry=SURFACES) as server:
        result = invoke("snapshot", server.url, "--toolset", "backsearch", "--name", "echo", "--out", tmp_path)
        assert result.exit_code == 0, result.output
        creates = [r for r in requests(surface_log) if r["path"] == "/create"]
        assert [r["toolset_name"] for r in creates] == ["backsearch"] * 3  # every probe opened with it
        snapshot = load(tmp_path / "echo.snapshot.json")
        assert snapshot.toolset == "backsearch"
        assert {"web_search", "web_fetch"} <= {tool.name for tool in snapshot.tools if not tool.shared}
        source = (tmp_path / "echo.py").read_text()
        assert '    toolset="backsearch",\n' in source
        assert "Sessions open with the 'backsearch' toolset." in source and "--toolset backsearch" in source
        changes = {change.rule: change for change in diff(load(REPO / "generated" / "echo.snapshot.json"), snapshot)}
        assert changes["TOOLSET_CHANGED"].detail == "none → backsearch" and changes["TOOLSET_CHANGED"].breaking

        surface_log.unlink()
        env = load_module(tmp_path / "echo.py").EchoEnv(base_url=server.url)
        env.reset(task_index=0)
        env.web_search(query="orlgen")  # a toolset tool: the session has it
        assert [r["toolset_name"] for r in requests(surface_log) if r["path"] == "/create"] == ["backsearch"]


def test_env_overrides_go_with_the_session_and_into_no_file(tmp_path, surface_log, echo_module):
    secret = "sk-override-5e1f0c"
    overrides = {"OPENAI_API_KEY": secret, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    with ServerProcess("examples.echo:Echo", entry=SURFACES) as server:
        env = echo_module.EchoEnv(base_url=server.url, env_overrides=overrides)
        env.reset(task_index=0)
        env.echo(text="hi")
    opened = [r for r in requests(surface_log) if r["path"] == "/create_session"]
    assert opened == [
        {
            "method": "POST",
            "path": "/create_session",
            "toolset_name": None,
            "env": {key: hashlib.sha256(value.encode()).hexdigest() for key, value in overrides.items()},
        }
    ]
    assert secret not in repr(env) and secret not in "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    with pytest.raises(ValueError, match="'HOME' is not one of ANTHROPIC_API_KEY"):
        echo_module.EchoEnv(env_overrides={"HOME": "/tmp"})


def test_split_types_and_group_scoring_are_recorded_and_discovery_opens_no_session(tmp_path, surface_log):
    with ServerProcess("tests.support.envs.grouped:Grouped", entry=SURFACES) as server:
        result = invoke("snapshot", server.url, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    interface = json.loads((tmp_path / "grouped.snapshot.json").read_text())
    assert interface["splits"] == [{"name": "hard", "num_tasks": 4, "type": "test"}, {"name": "train", "num_tasks": 4}]
    assert interface["score_group"] is True
    assert "    score_group=True,\n" in (tmp_path / "grouped.py").read_text()
    seen = requests(surface_log)
    sessions = sum(r["path"] == "/create_session" for r in seen)
    assert sessions == 6  # the probes' (3 per split), none around a discovery call
    assert sum(r["path"].endswith("/tools") for r in seen) == 1


def test_a_402_at_capture_is_the_runtimes_credit_line(tmp_path, monkeypatch, surface_log):
    monkeypatch.setenv("ORLGEN_PAYMENT_REQUIRED", "1")
    with ServerProcess("examples.echo:Echo", entry=SURFACES) as server:
        found = invoke("snapshot", server.url, "--out", tmp_path)
        named = invoke("snapshot", server.url, "--env", "echo", "--out", tmp_path)
    line = str(backoff.payment_required())
    assert found.exit_code == 2 and found.stderr == f"orlgen: error: {server.url}: {line}\n"
    assert named.exit_code == 2 and named.stderr == f"orlgen: error: {server.url}: cannot list splits: {line}\n"
    assert not list(tmp_path.glob("*.py"))


class _RequiredSecrets(http.server.BaseHTTPRequestHandler):
    """A loopback stand-in for the platform's API host: `required-secrets` of `Acme/judged`."""

    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self):
        self.seen.append((self.path, self.headers.get("X-API-Key")))
        found = self.path == "/v1/environments/Acme/judged/required-secrets"
        body = json.dumps({"secrets": ["JUDGE_API_KEY"]} if found else {"detail": "Not Found"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def api_host(monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RequiredSecrets)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENREWARD_API_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("OPENREWARD_API_KEY", "platform-key-1")
    _RequiredSecrets.seen = []
    yield _RequiredSecrets.seen
    server.shutdown()


def test_a_catalog_envs_missing_secret_is_named_before_any_probe(tmp_path, monkeypatch, surface_log, api_host):
    with ServerProcess("tests.support.envs.judge:Judged", entry=SURFACES) as server:
        monkeypatch.setenv("OPENREWARD_SESSION_URL", server.url)  # the platform's sessions host, on loopback
        missing = invoke("snapshot", "Acme/judged", "--out", tmp_path)
        assert missing.exit_code == 2
        assert missing.stderr == (
            "orlgen: error: Acme/judged: the environment requires the secret JUDGE_API_KEY (the platform's "
            "required-secrets): pass --secret JUDGE_API_KEY (the value is read from the environment variable of "
            "that name; only the name is recorded)\n"
        )
        assert requests(surface_log) == [], "nothing reached the sessions host"
        assert api_host == [("/v1/environments/Acme/judged/required-secrets", "platform-key-1")]

        given = invoke("snapshot", "Acme/judged", "--secret", "JUDGE_API_KEY=judge-key-1", "--out", tmp_path)
    assert given.exit_code == 0, given.output
    assert load(tmp_path / "acme_judged.snapshot.json").secret_names == ["JUDGE_API_KEY"]


def test_eval_sends_env_overrides_and_writes_them_nowhere(tmp_path, surface_log):
    from bench.chat_server import ChatServer, serving
    from tests.support.models.scripted_policy import scripted

    secret = "sk-eval-override-93ab"
    out = tmp_path / "rollouts.jsonl"
    with serving(ChatServer(scripted)) as chat, ServerProcess("examples.echo:Echo", entry=SURFACES) as server:
        result = invoke(
            "eval", "generated/echo.py", "--base-url", chat.url, "--model", "scripted", "-n", 2,
            "--env-url", server.url, "--env-override", f"OPENAI_API_KEY={secret}", "--out", out,
        )  # fmt: skip
        refused = invoke("eval", "generated/echo.py", "--env-override", "HOME=/tmp", "--env-url", server.url)
    assert result.exit_code == 0, result.output
    opened = [r["env"] for r in requests(surface_log) if r["path"] == "/create_session"]
    assert opened and opened == [{"OPENAI_API_KEY": hashlib.sha256(secret.encode()).hexdigest()}] * len(opened)
    assert secret not in result.output and secret not in out.read_text()
    assert refused.exit_code == 2 and "KEY one of ANTHROPIC_API_KEY" in refused.output


@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_group_reward_scores_each_grpo_group_in_one_request(tmp_path, monkeypatch, tiny_model_path):
    """A real GRPOTrainer step, 2 tasks x 2 generations, against an env that ranks a group's
    answers by length (`tests/support/envs/grouped.py`): one `/score_group` request per group, and
    each rollout gets its group's verdict."""
    from tests.support.modules import generated
    from tests.support.training import make_trainer

    groups = tmp_path / "groups.log"
    monkeypatch.setenv("ORLGEN_GROUP_LOG", str(groups))
    module = generated("tests.support.envs.grouped:Grouped", tmp_path / "module")
    assert module.SPEC.score_group and "group_reward" in module.__all__
    seen: list[tuple[list, list]] = []

    def group_reward(**kwargs):
        rewards = module.group_reward(**kwargs)
        seen.append((kwargs["completions"], rewards))
        return rewards

    with ServerProcess("tests.support.envs.grouped:Grouped") as server:
        rows = module.build_dataset(indices=[0, 1])
        trainer, _ = make_trainer(tiny_model_path, module, server.url, rows, tmp_path, reward_funcs=[group_reward])
        trainer.train()

    assert groups.read_text().splitlines() == ["2", "2"]  # one request per group of num_generations
    ((completions, rewards),) = seen
    from orlgen.runtime import final_message

    lengths = [len(final_message(c) or "") for c in completions]
    for first in (0, 2):  # the groups: rows 0-1 (task 0), 2-3 (task 1)
        a, b = lengths[first : first + 2]
        expected = [0.0, 0.0] if a == b else [float(a > b), float(b > a)]
        assert rewards[first : first + 2] == expected, (lengths, rewards)
    assert "rewards/group_reward/mean" in trainer.state.log_history[0]
