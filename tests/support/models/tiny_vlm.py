"""A tiny, random Qwen2.5-VL vision-language model and its processor, built fully offline.

Made the way `tests/support/models/tiny_qwen3.py` makes the text model: the same in-process tokenizer (it already
has Qwen's vision tokens), TRL's shipped `qwen2_5_vl` chat template byte for byte (so TRL sets up
tool calling for it), Pillow's image processor, and a random `Qwen2_5_VLForConditionalGeneration`
(hidden size 64, 2 layers; a vision tower of depth 1). `Qwen2_5_VLProcessor` insists on a video
processor, which needs torchvision (which breaks against the local CPU torch); the subclass here
takes an image processor and a tokenizer only, and records every batch of images it is handed, so
a test can see what reached it.
"""

from __future__ import annotations

from tests.support.models.tiny_qwen3 import EOS_TOKEN, PAD_TOKEN, build_tokenizer


def build_processor():
    from transformers import ProcessorMixin, Qwen2VLImageProcessorPil
    from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor
    from trl.chat_template_utils import qwen3_vl_chat_template

    class ImageOnlyQwen2_5_VLProcessor(Qwen2_5_VLProcessor):
        attributes = ["image_processor", "tokenizer"]  # noqa: RUF012 - the ProcessorMixin contract

        def __init__(self, image_processor, tokenizer, chat_template=None):
            self.image_token = "<|image_pad|>"
            self.video_token = "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
            self.seen_images = []  # every image the processor was called with, in order
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

        def __call__(self, images=None, text=None, videos=None, **kwargs):
            if images is not None:
                self.seen_images.extend(flatten_images(images))
            return super().__call__(images=images, text=text, **kwargs)

    tokenizer = build_tokenizer()
    tokenizer.chat_template = qwen3_vl_chat_template
    image_processor = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=56 * 56)
    return ImageOnlyQwen2_5_VLProcessor(image_processor, tokenizer, chat_template=qwen3_vl_chat_template)


def flatten_images(images):
    if isinstance(images, (list, tuple)):
        return [image for item in images for image in flatten_images(item)]
    return [images]


def build_vlm(processor, *, seed: int = 0):
    import torch
    from transformers import GenerationConfig, Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    tokenizer = processor.tokenizer
    eos_id = tokenizer.convert_tokens_to_ids(EOS_TOKEN)
    pad_id = tokenizer.convert_tokens_to_ids(PAD_TOKEN)
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 2048,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
            "bos_token_id": pad_id,
            "eos_token_id": eos_id,
            "pad_token_id": pad_id,
        },
        vision_config={"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64},
        image_token_id=processor.image_token_id,
        video_token_id=processor.video_token_id,
        vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config)
    model.generation_config = GenerationConfig(bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id)
    return model
