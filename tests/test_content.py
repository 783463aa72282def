"""Content blocks reach TRL in the author's order: images as content parts for GRPOTrainer,
as readable markers in TRL's async rollout worker, text-only outputs as `str` (real canvas server
on loopback, both ORS implementations (`ors_kind`), the checked-in generated module)."""

from __future__ import annotations

import importlib
import logging
import multiprocessing

import pytest
from orlgen.runtime import content


@pytest.fixture
def canvas_url(serve):
    return serve("examples.canvas:Canvas")


@pytest.fixture(scope="module")
def canvas():
    return importlib.import_module("generated.canvas")


def test_prompt_and_tool_images_are_content_parts_in_order(canvas, canvas_url):
    from PIL import Image

    env = canvas.CanvasEnv(base_url=canvas_url)
    prompt = env.reset(task_index=2)  # blue
    assert [part["type"] for part in prompt] == ["text", "image"]
    assert prompt[0]["text"].startswith("What colour is this canvas?")
    assert isinstance(prompt[1]["image"], Image.Image) and prompt[1]["image"].size == (56, 56)
    assert prompt[1]["image"].convert("RGB").getpixel((0, 0)) == (40, 70, 210)

    shot = env.screenshot()
    assert [part["type"] for part in shot] == ["image", "text"]  # the author's order
    assert shot[1]["text"] == "The canvas is 56x56 pixels."
    assert env.last_output == "[image: image/png, 56x56]\nThe canvas is 56x56 pixels."  # readable state
    assert env.answer(colour="blue") == "correct"  # a text-only output is still a str
    assert env.reward == 1.0 and not env._episode.open


def _async_worker_rollout(url: str, results) -> None:
    """Runs in a process named as TRL's async rollout worker names its child."""
    import sys

    sys.path.insert(0, ".")
    canvas = importlib.import_module("generated.canvas")
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("orlgen").addHandler(handler)
    env = canvas.CanvasEnv(base_url=url)
    prompt = env.reset(task_index=0)
    shots = [env.screenshot(), env.screenshot()]
    results.put((prompt, shots, [r.getMessage() for r in records]))


@pytest.mark.slow
def test_async_worker_gets_strings_with_image_markers_logged_once(shared_servers):
    """The worker's rendering, on the SDK's server only: what either server sends is the test above's."""
    canvas_url = shared_servers.url("openreward-sdk", "examples.canvas:Canvas")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    child = context.Process(target=_async_worker_rollout, args=(canvas_url, results), name=content.ASYNC_WORKER_PROCESS)
    child.start()
    prompt, shots, logged = results.get(timeout=120)
    child.join(30)
    assert prompt.startswith("What colour is this canvas?") and prompt.endswith(
        "\n[image: image/png, 56x56, 132 bytes]"
    )
    assert shots == ["[image: image/png, 56x56, 132 bytes]\nThe canvas is 56x56 pixels."] * 2
    assert len([m for m in logged if "image" in m]) == 1


def test_bad_image_data_becomes_a_marker_not_a_crash():
    blocks = [{"type": "text", "text": "look:"}, {"type": "image", "data": "not base64!", "mimeType": "image/png"}]
    assert content.render(blocks, parts=True) == [
        {"type": "text", "text": "look:"},
        {"type": "text", "text": "[image: image/png, undecodable]"},
    ]
    assert content.render([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], parts=True) == "a\nb"
