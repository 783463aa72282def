"""What a server's answer can make the model's side hold or show: images bounded in count and in
decoded pixels per answer (the size read before any pixel is decoded), terminal control
sequences escaped (issue 26, items 5 and 13). Real ORS servers on loopback, both implementations
(`ors_kind`); the image bomb is measured in a child process, by its peak resident memory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from orlgen.runtime import content
from orlgen.runtime.session.metrics import COUNTERS

from tests.support.modules import REPO, generated


@pytest.fixture
def bomb_url(serve):
    return serve("tests.support.envs.image_bomb:ImageBomb")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    return generated("tests.support.envs.image_bomb:ImageBomb", tmp_path_factory.mktemp("bomb"))


_CHILD = """
    import json, resource, sys
    sys.path.insert(0, {out!r})
    import {module} as bomb

    env = bomb.ImagebombEnv(base_url={url!r})
    env.reset(task_index=0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    shown = env.shots(count=8, side=9000)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({{"grew_mb": (after - before) / 1024, "parts": [p.get("text", "<image>") for p in shown]}}))
"""


@pytest.mark.slow
def test_eight_9000_pixel_pngs_are_markers_and_the_adapter_stays_small(bomb, bomb_url):
    """Eight 9000x9000 PNGs (2.6 MB of base64) took the adapter to 3 GB: each is over the 40 M
    pixel budget alone, found from its header, so none is decoded."""
    code = textwrap.dedent(_CHILD.format(out=str(bomb.__file__).rsplit("/", 1)[0], module=bomb.__name__, url=bomb_url))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["grew_mb"] < 150, found["grew_mb"]  # decoded, one image alone is 243 MB
    marker = (
        "[image: image/png, 9000x9000, {} bytes, not shown: over the limit of 40,000,000 decoded pixels per answer]"
    )
    assert len(found["parts"]) == 9 and found["parts"][-1] == "8 images"
    assert all(
        part.startswith(marker.split("{}")[0]) and part.endswith(marker.split("{}")[1]) for part in found["parts"][:8]
    )


def test_images_past_the_count_limit_are_markers_counted_in_metrics(bomb, bomb_url, monkeypatch):
    from PIL import Image

    COUNTERS.take()
    env = bomb.ImagebombEnv(base_url=bomb_url)
    env.reset(task_index=0)
    shown = env.shots(count=20, side=8)
    assert [isinstance(part.get("image"), Image.Image) for part in shown[:16]] == [True] * 16
    assert [part["text"] for part in shown[16:20]] == [
        shown[16]["text"].split(", not shown")[0] + ", not shown: over the limit of 16 images per answer]"
    ] * 4
    assert shown[16]["text"].startswith("[image: image/png, 8x8, ")
    assert COUNTERS.take()["images_refused"] == 4
    monkeypatch.setenv("ORLGEN_MAX_IMAGES", "2")
    monkeypatch.setenv("ORLGEN_MAX_IMAGE_PIXELS", "100")
    shown = env.shots(count=3, side=8)  # 64 pixels each: the second is over the pixel budget
    assert [part.get("type") for part in shown] == ["image", "text", "text", "text"]
    assert "over the limit of 100 decoded pixels per answer" in shown[1]["text"]
    assert "over the limit of 2 images per answer" not in shown[1]["text"]


def test_the_adapter_takes_its_own_limits(bomb, bomb_url, monkeypatch):
    """`image_limits=` on the adapter wins over the variables, for its prompts and tool answers."""
    monkeypatch.setenv("ORLGEN_MAX_IMAGES", "5")
    env = bomb.ImagebombEnv(base_url=bomb_url, image_limits=content.ImageLimits(images=1, pixels=10**9))
    env.reset(task_index=0)
    shown = env.shots(count=3, side=8)
    assert [part.get("type") for part in shown] == ["image", "text", "text", "text"]
    assert "over the limit of 1 images per answer" in shown[1]["text"]


def test_limits_are_given_in_code_or_refused_in_one_line(monkeypatch):
    limits = content.ImageLimits(images=1, pixels=10**9)
    blocks = [{"type": "image", "data": _tiny_png(), "mimeType": "image/png"}] * 2
    rendered = content.render(blocks, parts=True, limits=limits)
    assert [part["type"] for part in rendered] == ["image", "text"]
    monkeypatch.setenv("ORLGEN_MAX_IMAGES", "lots")
    with pytest.raises(content.OrlgenRuntimeError, match=r"^ORLGEN_MAX_IMAGES='lots': not a whole number ≥ 0$"):
        content.render(blocks, parts=True)


def _tiny_png() -> str:
    from tests.support.envs.image_bomb import png_base64

    return png_base64(4)


def test_terminal_control_sequences_reach_the_model_escaped(bomb, bomb_url):
    env = bomb.ImagebombEnv(base_url=bomb_url)
    env.reset(task_index=0)
    shown = env.terminal()
    assert shown == "ok\\x1b[2J\\x1b]0;owned\\x07\nnext\\x9b31m\\x00end"
    assert env.last_output == shown
    assert content.terminal_safe("tab\tand\nnewline stay; ünïcode too") == "tab\tand\nnewline stay; ünïcode too"
