"""`orlgen eval` of an agent module plays the agent loop its `run_episode` plays, against the
scripted endpoint (`tests/support/models/scripted_policy.py`, the same policy as the other eval
tests) and the real helpdesk ORS server: the same rewards as the env's TRL module, the rows
and table as for any module, the endpoint's bounds kept."""

from __future__ import annotations

import json

import pytest

from bench.chat_server import ChatServer, serving
from tests.support.cli import invoke
from tests.support.models.scripted_policy import scripted


@pytest.fixture(scope="module")
def chat():
    with serving(ChatServer(scripted)) as server:
        yield server


def rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.slow
def test_the_agent_loop_scores_what_trls_loop_scores(chat, helpdesk_url):
    runs = {}
    for module in ("generated/helpdesk.py", "generated/helpdesk_agent.py"):
        result = invoke(
            "eval", module, "--base-url", chat.url, "--model", "scripted", "-n", 4, "-k", 3,
            "--env-url", helpdesk_url, "--seed", 11, "--out", "-",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        runs[module] = sorted(rows(result.stdout), key=lambda row: (row["task_index"], row["sample"]))
    trl, agent = runs.values()
    key = lambda row: (row["task_index"], row["sample"])  # noqa: E731
    assert [(key(r), r["reward"], r["tool_calls"], r["tool_errors"]) for r in agent] == [
        (key(r), r["reward"], r["tool_calls"], r["tool_errors"]) for r in trl
    ]
    assert len({r["reward"] for r in agent}) > 1  # the policy's slips show, in both
    first = agent[0]
    assert first["env"] == "helpdesk" and first["outcome"] == "finished"
    # the model was shown the agent module's TOOLS: the snapshot's schemas, bounds included
    shown = {tool["function"]["name"]: tool["function"] for tool in json.loads(first["tools"])}
    assert shown["issue_refund"]["parameters"]["properties"]["items"]["minItems"] == 1


def test_an_agent_module_needs_an_endpoint(tmp_path):
    result = invoke("eval", "generated/helpdesk_agent.py", "--hf-model", str(tmp_path))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert "is an agent module: its episodes ask an OpenAI-compatible endpoint" in result.stderr


@pytest.mark.slow
def test_an_image_the_model_was_shown_is_in_the_rows_media(tmp_path_factory):
    """The both-env's `look` answers with an image; the stub's winning script looks, then submits."""
    from tests.support.modules import generated
    from tests.support.servers.both import BothServer
    from tests.support.verifiers_eval import Stub

    out = tmp_path_factory.mktemp("both")
    generated("tests.support.envs.both:Both", out, ("agent", "trl"))
    with BothServer("openreward-sdk") as server, Stub(out, "win") as stub:
        result = invoke(
            "eval", out / "both_agent.py", "--base-url", stub.url, "--model", "m", "-n", 1,
            "--env-url", server.url, "--out", "-",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = rows(result.stdout)
    assert row["reward"] == 1.0 and row["messages"][2]["content"] == "[image]the board"
    (image,) = json.loads(row["media"])
    assert (image["message"], image["part"]) == (2, 0) and image["url"].startswith("data:image/png;base64,iVBOR")
