"""Where the two ORS server implementations agree and where they differ, measured on the wire
(plain aiohttp requests, as curl would send them) against the both-env
(`tests/support/envs/both.py`) served by the openreward SDK's `Server` 0.1.167 and by ors-sdk
0.1.0's `ors.Server`. A runtime that speaks ORS must work with both, so each difference pinned
here is one it has to handle; a change in either server shows up as a failure here first.

Differences measured (openreward-sdk | ors-sdk):
- `GET /version`: `{"version": ...}` | 404.
- `POST /{env}/task`: carries `env_name` | does not.
- `GET /{env}/messages`: the prompt as messages | 404 (a client falls back to `/prompt`).
- `ok: false` refusals: carry `reason` (`not_found`, `input_validation`) | no `reason`.
- a call after `finished: true`: refused, `reason: episode_finished` | runs the tool.
- secrets: the `X-Secrets` header (base64 JSON), a `secrets` field in `/create` is a 422 | the
  `secrets` field of `/create`, the header is ignored.
- a call whose `task_id` the server does not know: | an `error` event `unknown task_id`.
Both: `/create` 422s on unknown fields, chunks of 4096 characters, a raising tool is an `error`
event, `/delete_session` answers 200 with the sid, a deleted session's call is a 404.
"""

from __future__ import annotations

import asyncio
import base64
import json

import aiohttp
import pytest

ENV = "both"


def events(text: str) -> list[tuple[str, str]]:
    """An SSE body as (event, data) pairs; `:` comment lines (pings) are left out."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = [line.split(":", 1) for line in block.split("\n") if line and not line.startswith(":")]
        named = {name: value.removeprefix(" ") for name, value in fields}
        if named:
            out.append((named.get("event", "message"), named.get("data", "")))
    return out


class Wire:
    """One aiohttp session against `url`; each method is one request, answered as it came."""

    def __init__(self, url: str, http: aiohttp.ClientSession) -> None:
        self.url, self.http = url, http

    async def get(self, path: str, **kwargs) -> tuple[int, object]:
        async with self.http.get(self.url + path, **kwargs) as response:
            return response.status, await _body(response)

    async def post(self, path: str, **kwargs) -> tuple[int, object]:
        async with self.http.post(self.url + path, **kwargs) as response:
            return response.status, await _body(response)

    async def session(self, body: dict | None = None, headers: dict | None = None) -> dict:
        """Open a session on task train[0] (or `body`); the headers that address it."""
        _, stream = await self.post("/create_session")
        (_, sid), _end = stream
        sid_headers = {"X-Session-ID": sid}
        status, answer = await self.post(
            "/create",
            headers={**sid_headers, **(headers or {})},
            json=body or {"env_name": ENV, "split": "train", "index": 0},
        )
        assert (status, answer) == (200, {"sid": sid})
        return sid_headers

    async def call(self, headers: dict, name: str, arguments: dict | None = None, **extra) -> list[tuple[str, str]]:
        status, stream = await self.post(
            f"/{ENV}/call", headers=headers, json={"name": name, "input": arguments or {}, **extra}
        )
        assert status == 200, stream
        return stream

    async def result(self, headers: dict, name: str, arguments: dict | None = None) -> dict:
        """A call's result: its chunks and end data joined and read as JSON."""
        stream = await self.call(headers, name, arguments)
        assert stream[0][0] == "task_id" and stream[-1][0] == "end", stream
        return json.loads("".join(data for event, data in stream[1:]))


async def _body(response: aiohttp.ClientResponse) -> object:
    text = await response.text()
    if response.content_type == "text/event-stream":
        return events(text)
    try:
        return json.loads(text)
    except ValueError:
        return text


def run(url: str, script) -> object:
    async def main():
        async with aiohttp.ClientSession() as http:
            return await script(Wire(url, http))

    return asyncio.run(main())


def test_the_same_catalogue_on_both(ors_server):
    async def script(wire):
        return [
            await wire.get("/health"),
            await wire.get("/list_environments"),
            await wire.get(f"/{ENV}/splits"),
            await wire.post(f"/{ENV}/tasks", json={"split": "test"}),
            await wire.get(f"/{ENV}/tools"),
        ]

    health, names, splits, tasks, (status, tools) = run(ors_server.url, script)
    assert health == (200, {"status": "ok"}) and names == (200, [ENV])
    assert splits == (200, [{"name": "train", "type": "train"}, {"name": "test", "type": "test"}])
    assert tasks == (200, {"tasks": [{"id": 100, "target": 3}], "env_name": ENV})
    assert status == 200
    assert [tool["name"] for tool in tools["tools"]] == [
        "count", "crash", "guess", "keys", "long", "look", "submit", "wait",
    ]  # fmt: skip
    (guess,) = [tool for tool in tools["tools"] if tool["name"] == "guess"]
    assert guess["input_schema"]["properties"]["guess"] == {
        "description": "A number between 0 and 100.", "maximum": 100, "minimum": 0, "title": "Guess", "type": "integer",
    }  # fmt: skip


def test_version_and_the_task_s_env_name_only_on_the_openreward_server(ors_server):
    async def script(wire):
        return await wire.get("/version"), await wire.post(f"/{ENV}/task", json={"split": "train", "index": 1})

    version, task = run(ors_server.url, script)
    if ors_server.kind == "openreward-sdk":
        assert version == (200, {"version": "0.1.167", "build_sha": None})
        assert task == (200, {"task": {"id": 1, "target": 17}, "env_name": ENV})
    else:
        assert version == (404, {"detail": "Not Found"})
        assert task == (200, {"task": {"id": 1, "target": 17}})


def test_messages_only_on_the_openreward_server_and_the_prompt_on_both(ors_server):
    async def script(wire):
        headers = await wire.session()
        return await wire.get(f"/{ENV}/messages", headers=headers), await wire.get(f"/{ENV}/prompt", headers=headers)

    messages, prompt = run(ors_server.url, script)
    text = {"text": "Task 0: find the target number, then submit it.", "detail": None, "type": "text"}
    assert prompt == (200, [text])
    if ors_server.kind == "openreward-sdk":
        assert messages == (200, [{"role": "user", "blocks": [text], "detail": None}])
    else:
        assert messages == (404, {"detail": "Not Found"})


def test_a_call_streams_its_task_id_then_the_result_in_4096_character_chunks(ors_server):
    async def script(wire):
        headers = await wire.session()
        return await wire.call(headers, "long", {"size": 10_000}), await wire.call(headers, "crash")

    long, crash = run(ors_server.url, script)
    assert [event for event, _ in long] == ["task_id", "chunk", "chunk", "end"]
    assert [len(data) for _, data in long[1:3]] == [4096, 4096]
    result = json.loads("".join(data for _, data in long[1:]))
    assert result["ok"] is True and len(result["output"]["blocks"][0]["text"]) == 10_000
    assert [event for event, _ in crash] == ["task_id", "error"] and crash[1][1] == "tool crashed on purpose"


def test_refusals_carry_a_reason_only_on_the_openreward_server(ors_server):
    async def script(wire):
        headers = await wire.session()
        return [
            await wire.result(headers, "nope"),
            await wire.result(headers, "guess", {"guess": 500}),
            await wire.result(headers, "submit", {"answer": 10}),
            await wire.result(headers, "guess", {"guess": 1}),
        ]

    not_found, invalid, submitted, after = run(ors_server.url, script)
    assert not_found["error"] == "'nope' is not a valid tool"
    assert invalid["error"].startswith("Tool input validation error: [{'type': 'less_than_equal'")
    assert submitted["output"]["reward"] == 1.0 and submitted["output"]["finished"] is True
    if ors_server.kind == "openreward-sdk":
        assert (not_found["reason"], invalid["reason"]) == ("not_found", "input_validation")
        assert after["ok"] is False and after["reason"] == "episode_finished"
    else:
        assert "reason" not in not_found and "reason" not in invalid
        assert after == {  # ors-sdk runs a call after the episode finished
            "ok": True,
            "output": {"blocks": [{"text": "higher", "detail": None, "type": "text"}], "metadata": None,
                       "reward": None, "finished": False},
        }  # fmt: skip


def test_create_refuses_unknown_fields_on_both_and_secrets_travel_differently(ors_server):
    header = base64.b64encode(json.dumps({"TOKEN": {"value": "t", "allowed_domains": []}}).encode()).decode()
    task = {"env_name": ENV, "split": "train", "index": 0}

    async def script(wire):
        _, ((_, sid), _end) = await wire.post("/create_session")
        unknown = await wire.post("/create", headers={"X-Session-ID": sid}, json={**task, "extra": 1})
        in_body = await wire.post("/create", headers={"X-Session-ID": sid}, json={**task, "secrets": {"BODY": "b"}})
        by_header = await wire.session(headers={"X-Secrets": header})
        seen = [await wire.result(by_header, "keys")]
        if in_body[0] == 200:
            seen.append(await wire.result({"X-Session-ID": sid}, "keys"))
        return unknown, in_body, seen

    unknown, in_body, seen = run(ors_server.url, script)
    assert unknown[0] == 422 and unknown[1]["detail"][0]["loc"] == ["body", "extra"]
    names = [result["output"]["blocks"][0]["text"] for result in seen]
    if ors_server.kind == "openreward-sdk":
        assert in_body[0] == 422 and in_body[1]["detail"][0]["loc"] == ["body", "secrets"]
        assert names == ["TOKEN"]
    else:
        assert in_body == (200, {"sid": in_body[1]["sid"]})
        assert names == ["", "BODY"]  # the header is ignored; the body's secrets reach the env


def test_an_unknown_task_id_is_an_error_event_on_ors_sdk(ors_server):
    async def script(wire):
        headers = await wire.session()
        return await wire.call(headers, "count", task_id="0" * 32)

    stream = run(ors_server.url, script)
    if ors_server.kind == "ors-sdk":
        assert stream == [("error", "unknown task_id")]
    else:
        assert stream[0][0] == "error", stream


def test_a_deleted_session_is_a_404_and_delete_session_answers_on_both(ors_server):
    async def script(wire):
        headers = await wire.session()
        ping = await wire.post("/ping", headers=headers)
        deleted = await wire.post("/delete", headers=headers)
        call = await wire.post(f"/{ENV}/call", headers=headers, json={"name": "count", "input": {}})
        return ping, deleted, call, await wire.post("/delete_session", headers=headers), headers["X-Session-ID"]

    ping, deleted, call, closed, sid = run(ors_server.url, script)
    assert ping == (200, {"status": "ok"}) and deleted == (200, {"sid": sid}) and closed == (200, {"sid": sid})
    assert call == (404, {"detail": "Active environment not found"})


@pytest.mark.parametrize("path", ["/ping", f"/{ENV}/prompt"])
def test_a_request_without_a_session_id_is_a_400_on_both(ors_server, path):
    async def script(wire):
        return await (wire.post(path) if path == "/ping" else wire.get(path))

    assert run(ors_server.url, script) == (400, {"detail": "X-Session-ID header is required"})
