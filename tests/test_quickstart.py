"""The README's training block, run exactly as written: its text is taken from README.md when the
test runs and executed unchanged, as a reader with a CPU and no Hub access would run it.

The block builds its own model offline (`orlgen.tiny_model.save_tiny_model`), trains one GRPO step
on CPU, and serves the helpdesk env itself through the generated adapter of a `module:Class`
target: no URL anywhere. The test only gives it a working directory of its own (the block writes
`./tiny-model`), and drops `ORLGEN_*` variables so a developer's shell cannot point it elsewhere.

Beside it, `save_tiny_model` itself: the same bytes each time, TRL's tool-call parsing on its
template, a directory it did not write never touched, its directory swapped whole (these last
build no model and import no torch).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from orlgen import tiny_model
from orlgen.tiny_model import MARKER, save_tiny_model

from tests.support.modules import REPO


def quickstart() -> str:
    """The README's Python block that builds a trainer."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    return next(block for block in blocks if "GRPOTrainer(" in block)


@pytest.mark.slow  # a GRPO step, and the imports of torch, transformers and TRL
@pytest.mark.usefixtures("quiet_and_single_threaded")
def test_the_readme_training_block_trains_one_step_on_cpu_as_written(tmp_path, monkeypatch):
    code = quickstart()
    for name in [name for name in os.environ if name.startswith("ORLGEN_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "README.md training block", "exec"), scope)  # the local server's log goes at exit

    trainer = scope["trainer"]
    assert trainer.state.global_step == 1
    assert trainer.state.log_history[0]["num_tokens"] > 0  # two rollouts generated and trained on
    assert trainer.args.use_cpu and not trainer.args.bf16
    assert scope["HelpdeskEnv"].spec.target.kind == "module"  # served by the adapter, not a URL
    model_dir = (tmp_path / trainer.model.name_or_path).resolve()  # relative to the block's directory
    assert model_dir.parent == tmp_path.resolve() and (model_dir / MARKER).is_file()  # built here: no download
    assert not list(tmp_path.glob("trainer_output/*"))  # a first run saves no checkpoint of a random model


@pytest.mark.slow
def test_the_tiny_model_is_the_same_bytes_each_time_and_replaces_its_own(tmp_path):
    first = save_tiny_model(tmp_path / "model")
    before = {path.name: path.read_bytes() for path in sorted((tmp_path / "model").iterdir())}
    assert first == str(tmp_path / "model")
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja", MARKER} <= before.keys()
    assert save_tiny_model(tmp_path / "model") == first  # a second run replaces its own
    assert {path.name: path.read_bytes() for path in sorted((tmp_path / "model").iterdir())} == before
    assert [path.name for path in tmp_path.iterdir()] == ["model"]  # nothing staged is left beside it


def test_the_tiny_model_refuses_a_directory_it_did_not_write_and_touches_nothing(tmp_path):
    """Refused before anything is built (no torch import): a user's checkpoint, a file, a link."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "file").write_text("x", encoding="utf-8")
    (tmp_path / "link").symlink_to(tmp_path / "missing")
    for path in (theirs, tmp_path / "file", tmp_path / "link"):
        with pytest.raises(ValueError, match=r"^save_tiny_model: .* exists and is not a tiny model saved before"):
            save_tiny_model(path)
    assert [path.name for path in theirs.iterdir()] == ["config.json"]
    assert (theirs / "config.json").read_text(encoding="utf-8") == "{}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["file", "link", "theirs"]


def _model_dir(path: Path, text: str) -> Path:
    """A stand-in for a saved tiny model (its marker and one file): what `_swap_in` moves is
    directories, whatever they hold, so these tests build no model."""
    path.mkdir()
    (path / MARKER).write_text("", encoding="utf-8")
    (path / "config.json").write_text(text, encoding="utf-8")
    return path


def test_saving_over_a_tiny_model_swaps_the_directory_whole(tmp_path):
    _model_dir(tmp_path / "model", "old")
    tiny_model._swap_in(_model_dir(tmp_path / "staging", "new"), tmp_path / "model")
    assert (tmp_path / "model" / "config.json").read_text(encoding="utf-8") == "new"
    assert [path.name for path in tmp_path.iterdir()] == ["model"]


def test_two_processes_saving_to_one_path_keep_one_model(tmp_path, monkeypatch):
    """Fault injection (a wrapped `Path.rename`): another process's model lands at the path just
    before this one renames its own there, as when every rank of a torchrun runs the README block."""
    target, staging = tmp_path / "model", _model_dir(tmp_path / "staging", "ours")
    rename = Path.rename

    def another_writer_first(self, destination):
        if self == staging:
            _model_dir(target, "theirs")
        return rename(self, destination)

    monkeypatch.setattr(Path, "rename", another_writer_first)
    tiny_model._swap_in(staging, target)
    assert (target / "config.json").read_text(encoding="utf-8") == "theirs"  # kept: the same bytes in life
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model", "staging"]  # the caller removes its own


def test_a_model_of_this_orlgen_is_never_moved_nor_rebuilt(tmp_path):
    """Another rank's finished model may be loading while this one saves: one of this orlgen (its
    marker's words) is left where it is, by a save (which builds nothing) and by a swap alike."""
    target = _model_dir(tmp_path / "model", "theirs")
    (target / MARKER).write_text(tiny_model._MARKER_TEXT, encoding="utf-8")
    inode = target.stat().st_ino
    assert save_tiny_model(target) == str(target)
    tiny_model._swap_in(_model_dir(tmp_path / "staging", "ours"), target)
    assert (target / "config.json").read_text(encoding="utf-8") == "theirs" and target.stat().st_ino == inode
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model", "staging"]  # the caller removes its own


def test_a_failed_swap_puts_the_old_model_back(tmp_path, monkeypatch):
    """Fault injection: the rename into place fails (a full disk, a permission)."""
    target, staging = _model_dir(tmp_path / "model", "old"), _model_dir(tmp_path / "staging", "new")
    rename = Path.rename

    def refused(self, destination):
        if self == staging:
            raise PermissionError(13, "Permission denied", str(destination))
        return rename(self, destination)

    monkeypatch.setattr(Path, "rename", refused)
    with pytest.raises(PermissionError):
        tiny_model._swap_in(staging, target)
    assert (target / "config.json").read_text(encoding="utf-8") == "old"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model", "staging"]


@pytest.mark.slow
def test_the_tiny_model_speaks_hermes_tool_calls_as_trl_parses_them(tmp_path):
    """TRL parses tool calls only for a chat template it knows byte for byte: the saved template must
    be its Qwen3 one, so a `<tool_call>` block in a completion comes back as a call, as GRPOTrainer
    reads it (`trl.chat_template_utils.parse_response`, after the prompt's tokens)."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import add_response_schema, parse_response, qwen3_chat_template, supports_tool_calling

    tokenizer = AutoTokenizer.from_pretrained(save_tiny_model(tmp_path / "model"))
    assert tokenizer.chat_template == qwen3_chat_template and supports_tool_calling(tokenizer)
    tokenizer = add_response_schema(tokenizer)
    text = '<tool_call>\n{"name": "get_order", "arguments": {"order_id": "ORD-1"}}\n</tool_call><|im_end|>'
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Where is ORD-1?"}], add_generation_prompt=True)
    parsed = parse_response(tokenizer, tokenizer(text)["input_ids"], prefix=list(prompt["input_ids"]))
    assert parsed["tool_calls"] == [
        {"type": "function", "function": {"name": "get_order", "arguments": {"order_id": "ORD-1"}}}
    ]
