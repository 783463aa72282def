"""The wire validates once: an ORS session hands the layers above validated, typed answers.

`Session.call_tool` and `call_terminal_tool` return an `ors.blocks.Step` (reward a float32-finite
float or None, `finished` a bool, metadata a dict or None, blocks text and image blocks of the
right shape), `get_prompt` validated blocks; a value the protocol does not allow is a `WireError`
raised by the session itself, so the core validates nothing again. Served by the real SDK server
with the FAULT INJECTION middleware of `tests/support/servers/wire.py`, which rewrites answers into
the malformed values its cases name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from orlgen.runtime.ors import blocks as wire
from orlgen.runtime.ors import client as ors
from orlgen.serve import ServerProcess

from tests.test_wire import QUOTED


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ORLGEN_COUNT_FILE", str(tmp_path_factory.mktemp("counts") / "counts.json"))
        process = ServerProcess("tests.support.envs.wire:Wire", entry="tests.support.servers.wire").start()
    yield process
    process.stop()


def on_session(url: str, index: int, use: Callable[[Any], Awaitable[Any]]) -> Any:
    """`use(session)` on a new session of task `index`, the session deleted and the client closed after."""

    async def run() -> Any:
        client = ors.Client(url, None, "wire", None, None)
        try:
            session = await client.open_session(split="train", index=index)
            try:
                return await use(session)
            finally:
                await session.close()
        finally:
            await client.aclose()

    return asyncio.run(run())


def test_a_call_answers_a_validated_step(server):
    step = on_session(server.url, 0, lambda session: session.call_tool("step", {"case": "ok"}))
    assert isinstance(step, wire.Step)
    assert (step.reward, step.finished, step.metadata) == (0.5, False, {"case": "ok"})
    assert [(block.type, block.text) for block in step.blocks] == [("text", "answered ok")]


def test_the_terminal_tool_answers_a_validated_step(server):
    async def submit(session: Any) -> Any:
        await session.list_tools()
        return await session.call_terminal_tool("ok")

    step = on_session(server.url, 0, submit)
    assert isinstance(step, wire.Step) and (step.reward, step.finished) == (1.0, True)


def test_a_prompt_is_validated_blocks(server):
    prompt = on_session(server.url, 0, lambda session: session.get_prompt())
    assert isinstance(prompt, tuple)
    assert [(block.type, block.text) for block in prompt] == [("text", "Task 0: answer with one word.")]


@pytest.mark.parametrize("case", sorted(QUOTED))
def test_a_malformed_call_answer_is_a_wire_error_from_the_session(server, case):
    with pytest.raises(wire.WireError) as raised:
        on_session(server.url, 0, lambda session: session.call_tool("step", {"case": case}))
    assert QUOTED[case] in str(raised.value)


def test_a_malformed_prompt_is_a_wire_error_from_the_session(server):
    with pytest.raises(wire.WireError, match="a text block's text 5 is not a string"):
        on_session(server.url, 3, lambda session: session.get_prompt())
