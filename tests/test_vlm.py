"""A real GRPOTrainer step with a tiny vision-language model (built offline, `tests/support/models/tiny_vlm.py`)
on the canvas environment (examples.canvas, a real loopback server): the image blocks the
environment sends reach the model's processor as images, not as text and not dropped: the prompt's
image through the processor, the `screenshot` tool's image through TRL's tool loop (the model is
first taught, on the exact first-turn tokens and pixels TRL builds, to call `screenshot`)."""

from __future__ import annotations

import importlib

import pytest
from orlgen.serve import ServerProcess

from tests.support.training import Recorder, answer_ids, grpo_trainer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
]  # slow: a GRPO step of a vision-language model


@pytest.fixture(scope="module")
def canvas_url():
    with ServerProcess("examples.canvas:Canvas") as server:
        yield server.url


@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_grpo_step_hands_the_environments_images_to_the_processor(canvas_url, tmp_path):
    import functools

    from tests.support.models.tiny_vlm import build_processor, build_vlm

    canvas = importlib.import_module("generated.canvas")
    processor = build_processor()
    factory = Recorder(functools.partial(canvas.CanvasEnv, base_url=canvas_url))
    trainer = grpo_trainer(
        tmp_path,
        model=build_vlm(processor),
        processing_class=processor,
        environment_factory=factory,
        train_dataset=canvas.build_dataset(indices=[2]),
        per_device_train_batch_size=2,
        max_completion_length=32,
        max_tool_calling_iterations=1,
        temperature=0.3,
    )
    loss = teach_screenshot(trainer, canvas, canvas_url)
    assert loss < 0.05, f"the tiny model did not learn the tool call (loss {loss:.3f})"
    seen_by_image_processor = record_calls(processor.image_processor)
    trainer.train()

    assert trainer.state.global_step == 1
    blue = [image for image in processor.seen_images if image.convert("RGB").getpixel((0, 0)) == (40, 70, 210)]
    assert len(blue) >= 2 and all(image.size == (56, 56) for image in blue)  # each rollout's prompt image
    played = factory.created
    assert all(env.tool_calls >= 1 for env in played), [env.tool_calls for env in played]
    assert all(env.last_output == "[image: image/png, 56x56]\nThe canvas is 56x56 pixels." for env in played)
    tool_blue = [image for image in seen_by_image_processor if image.convert("RGB").getpixel((0, 0)) == (40, 70, 210)]
    assert len(tool_blue) >= 2  # the screenshots, as images, in the tool loop


def record_calls(image_processor):
    """The images TRL hands the image processor directly (its tool loop does, for tool images)."""
    from tests.support.models.tiny_vlm import flatten_images

    seen = []
    original = image_processor.__call__

    class Recording(type(image_processor)):
        def __call__(self, images=None, *args, **kwargs):
            if images is not None:
                seen.extend(flatten_images(images))
            return original(images, *args, **kwargs)

    image_processor.__class__ = Recording
    return seen


def teach_screenshot(trainer, canvas, url) -> float:
    """Supervised steps on the trainer's model: on the task's real prompt (text and image, from the
    server), call `screenshot`; the tokens are the exact ones TRL renders for the first turn."""
    import torch
    from trl.data_utils import prepare_multimodal_messages

    processor = trainer.processing_class
    row = canvas.build_dataset(indices=[2])[0]
    prompt = canvas.CanvasEnv(base_url=url).reset(**row)
    # As TRL builds the first turn: the row's empty user text, then what reset returned.
    messages = prepare_multimodal_messages([{"role": "user", "content": [{"type": "text", "text": ""}, *prompt]}])
    first = processor.apply_chat_template(
        conversation=[messages],
        tools=trainer._env_tools[None],
        chat_template=trainer.chat_template,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
    )
    tokenizer = processor.tokenizer
    call = '<tool_call>\n{"name": "screenshot", "arguments": {}}\n</tool_call>'
    call_ids = answer_ids(tokenizer, call)
    input_ids = torch.cat([first["input_ids"], torch.tensor([call_ids])], dim=1)
    # Which tokens are image tokens (the rope positions of Qwen2.5-VL depend on it), as at generation.
    mm_token_type_ids = torch.cat([first["mm_token_type_ids"], torch.zeros((1, len(call_ids)), dtype=torch.long)], 1)
    labels = torch.full_like(input_ids, -100)
    labels[0, -len(call_ids) :] = torch.tensor(call_ids)
    model = trainer.model
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.0)
    torch.manual_seed(0)
    for _ in range(60):
        optimizer.zero_grad(set_to_none=True)
        loss = model(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            pixel_values=first["pixel_values"],
            image_grid_thw=first["image_grid_thw"],
            mm_token_type_ids=mm_token_type_ids,
            labels=labels,
        ).loss
        loss.backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss.detach())
