"""What the model sees of environments written the way people publish them (issue 11).

Each env is captured from a real server into a temp directory and its generated module imported.
Assertions are on what reaches the model, `transformers.utils.get_json_schema(method)` and the
text TRL's Qwen3 chat template renders for the tools, and on what the module does for a user
(signatures, wire names, lint and type checks). The author's words below are copied from the
env sources' docstrings by hand: they are the expected output, not read back from orlgen.
"""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from orlgen.runtime.trl.tools import tool_methods
from transformers.utils import get_json_schema

from tests.support.models.tiny_qwen3 import build_tokenizer
from tests.support.modules import REPO, load_module

ENVS = {
    "wordgrid": "examples.wordgrid:WordGrid",
    "icu": "examples.icu_sepsis:IcuSepsisEnvironment",
    "helpdesk": "examples.helpdesk:Helpdesk",
}

# (env, tool) → the author's docstring, by section: prose, each parameter in declared order, Returns.
AUTHOR: dict[tuple[str, str], dict[str, Any]] = {
    ("wordgrid", "place_letter"): {
        "prose": "Write one letter into a cell of the grid, replacing what was there. "
        "Rows and columns count from zero at the top-left corner.",
        "params": {
            "row": "Row of the cell, counted from the top.",
            "column": "Column of the cell, counted from the left.",
            "letter": "The letter to write.",
        },
        "returns": "The grid after the move, one line per row.",
    },
    ("wordgrid", "find_words"): {
        "prose": "List the words of the dictionary that start with a prefix.",
        "params": {
            "prefix": "Letters the words must start with.",
            "limit": "Largest number of words to list.",
            "start": "Optional (row, column) cell the word would start from.",
            "options": "How to search the grid.",
        },
        "returns": "The matching words, comma-separated.",
    },
    ("wordgrid", "submit"): {
        "prose": "Submit the grid; the episode ends and scores 1 when the word can be read in it.",
        "params": {},
        "returns": "Whether the word was found.",
    },
    ("icu", "register_patient"): {
        "prose": "Register the patient under the name on their wristband.",
        "params": {"名前": "The patient's name, as written on the wristband.", "age": "Age in whole years."},
        "returns": "The registration line of the chart.",
    },
    ("icu", "transfer"): {
        "prose": "Move the patient between wards.",
        # Python cannot declare a parameter `from`: the model sees `from_` (the wire name is accepted too).
        "params": {
            "from_": "Ward the patient leaves.",
            "to": "Ward the patient goes to.",
            "urgent": "Skip the bed-management queue.",
        },
        "returns": "The arguments the ward received, by wire name.",
    },
    ("icu", "administer"): {
        "prose": "Give the patient one dose of a drug. "
        "Fluids and vasopressors raise the pressure; antibiotics treat the infection.",
        "params": {
            "drug": "What to give.",
            "dose": "Amount in millilitres for fluids, else milligrams.",
            "route": "How the drug is given.",
        },
        "returns": "The patient's mean arterial pressure after the dose.",
    },
    ("icu", "order_labs"): {
        "prose": "Order laboratory tests.",
        "params": {"tests": "The tests to run.", "note": "Free-text note for the laboratory."},
        "returns": "The results, one per line.",
    },
    ("icu", "set_pump"): {  # parameters documented as un-headed `name: text` lines, no `Args:`
        "prose": "Set the rate of one infusion pump. Note: a pump keeps its rate until it is set again.",
        "params": {
            "pump_id": "Which pump, 1 to 4 (bed-side first).",
            "rate": "Infusion rate in ml/h; 0 stops the pump.",
        },
        "returns": "",
    },
    ("icu", "edit"): {
        "prose": "Replace text in one of the patient's chart notes.",
        "params": {
            "file_path": "Path of the note, relative to the chart.",
            "old_string": "The exact text to replace.",
            "new_string": "The text to put in its place.",
        },
        "returns": "The note after the edit.",
    },
}
AUTHORED = sorted(AUTHOR)
FILLER = re.compile(r"The [^ ]+ argument\.|Sent as '|Args :|Returns :|\b1 characters\b|\b1 items\b")


@dataclass
class Generated:
    path: Path  # the generated module file
    module: ModuleType
    snapshot: Any
    snapshot_path: Path

    @property
    def env_class(self) -> type:
        from orlgen.runtime.trl.adapter import EnvAdapter

        (cls,) = {
            v
            for v in vars(self.module).values()
            if inspect.isclass(v) and issubclass(v, EnvAdapter) and v is not EnvAdapter
        }
        return cls

    def methods(self) -> dict[str, Any]:
        """Tool methods as TRL collects them: public functions of the class, keyed by `__name__`."""
        return {fn.__name__: fn for fn in tool_methods(self.env_class)}

    def seen(self) -> dict[str, dict]:
        """Wire name → the `function` block of the JSON the model is shown."""
        return {name: get_json_schema(fn)["function"] for name, fn in self.methods().items()}


def _capture(target: str, out: Path, **options: Any) -> Generated:
    from orlgen.capture.live import CaptureOptions, capture
    from orlgen.render.jobs import generate
    from orlgen.review.files import write_files

    snapshot = capture(target, CaptureOptions(**options))
    path = out / snapshot.file_name
    write_files(snapshot.files(path))
    files = generate([(path, snapshot)])
    write_files(files)
    (module_path,) = [p for p in files if p.suffix == ".py"]
    return Generated(module_path, load_module(module_path), snapshot, path)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, Generated]:
    out = tmp_path_factory.mktemp("surface")
    return {key: _capture(target, out) for key, target in ENVS.items()}


def _squash(text: str) -> str:
    return " ".join(text.split())


def _function(generated: dict[str, Generated], key: tuple[str, str]) -> dict:
    return generated[key[0]].seen()[key[1]]


@pytest.fixture(scope="module")
def tokenizer():
    """An offline tokenizer carrying TRL's Qwen3 chat template (tests/support/models/tiny_qwen3.py)."""
    return build_tokenizer()


def _rendered_tools(tokenizer: Any, methods: list[Any]) -> str:
    """The prompt text the model is trained on when these tool methods are offered, as the
    tokenizer's chat template renders it (it calls `get_json_schema` on each method, as TRL does)."""
    return tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], tools=methods, tokenize=False)


# ── each parameter once, in the author's words and order ──────────────────────


def test_parameters_in_the_authors_order(generated):
    shown = {key: list(_function(generated, key)["parameters"].get("properties", {})) for key in AUTHORED}
    assert shown == {key: list(AUTHOR[key]["params"]) for key in AUTHORED}


def test_each_parameter_described_once_in_the_authors_words(generated):
    wrong = []
    for key in AUTHORED:
        function = _function(generated, key)
        shown = json.dumps(function, ensure_ascii=False)
        for name, words in AUTHOR[key]["params"].items():
            own = _squash(function["parameters"]["properties"].get(name, {}).get("description", ""))
            if not own.startswith(words) or shown.count(words) != 1:  # a fact the author did not write may follow
                wrong.append((key, name, own))
    assert wrong == []


def test_tool_description_is_the_authors_prose(generated):
    shown = {key: _squash(_function(generated, key)["description"]) for key in AUTHORED}
    assert shown == {key: AUTHOR[key]["prose"] for key in AUTHORED}


def test_returns_becomes_the_methods_returns(generated):
    shown = {key: _squash(_function(generated, key)["return"].get("description", "")) for key in AUTHORED}
    assert shown == {key: AUTHOR[key]["returns"] for key in AUTHORED}


@pytest.mark.parametrize("env", ["wordgrid", "icu", "helpdesk"])
def test_no_mangling_filler_or_bad_plurals(generated, tokenizer, env):
    text = _rendered_tools(tokenizer, list(generated[env].methods().values()))
    assert FILLER.findall(text) == []


def test_chat_template_shows_each_parameter_once_in_order(generated, tokenizer):
    """The rendered prompt: each author's line once, and `row` before `column` before `letter`."""
    text = _rendered_tools(tokenizer, [generated[env].methods()[name] for env, name in AUTHORED])
    for key in AUTHORED:
        for words in AUTHOR[key]["params"].values():
            assert text.count(words) == 1, words
    place = text[text.index('"name": "place_letter"') :]
    properties = place[place.index('"properties"') :]
    assert properties.index('"row"') < properties.index('"column"') < properties.index('"letter"')


# ── prose the model can use ───────────────────────────────────────────────────


def test_constraints_read_as_english(generated):
    find_words = generated["wordgrid"].seen()["find_words"]["parameters"]["properties"]
    assert "at least 1 character" in find_words["prefix"]["description"]
    assert "at least 1 characters" not in find_words["prefix"]["description"]
    start = find_words["start"]
    shown_as_pair = any(len(branch.get("prefixItems", [])) == 2 for branch in [start, *start.get("anyOf", [])])
    assert shown_as_pair or "exactly 2 items" in start["description"]
    assert "at least 2 items" not in start["description"]


def test_nested_null_shown_as_null_and_nested_defaults_shown(generated):
    options = generated["wordgrid"].seen()["find_words"]["parameters"]["properties"]["options"]["description"]
    assert "Any" not in options
    assert re.search(r"stop_at\??\s*:[^,}]*\bnull\b", options), options
    assert '"both"' in options and re.search(r"min_length\b[^,}]*\b3\b", options)  # the nested defaults


def test_nested_structure_is_shown(generated):
    """Today's behaviour that must survive the rewrite: the options model's fields reach the model."""
    options = generated["wordgrid"].seen()["find_words"]["parameters"]["properties"]["options"]
    text = json.dumps(options)
    assert all(name in text for name in ("direction", "min_length", "stop_at"))
    assert all(value in text for value in ("across", "down", "both"))


# ── honest names and signatures ───────────────────────────────────────────────


def test_schema_defaults_are_real_python_defaults(generated):
    methods = {**generated["wordgrid"].methods(), **generated["icu"].methods()}

    def default(tool: str, param: str) -> Any:
        return inspect.signature(methods[tool]).parameters[param].default

    assert default("find_words", "limit") == 10
    assert default("find_words", "start") is None
    assert default("transfer", "urgent") is False
    assert default("administer", "route") == "iv"
    assert default("order_labs", "note") is None


def test_required_parameters_have_no_default(generated):
    place_letter = generated["wordgrid"].methods()["place_letter"]
    parameters = inspect.signature(place_letter).parameters
    assert all(parameters[name].default is inspect.Parameter.empty for name in ("row", "column", "letter"))


def test_unicode_parameter_name_is_kept(generated):
    register = generated["icu"].seen()["register_patient"]
    assert "名前" in register["parameters"]["properties"]
    assert "unnamed" not in json.dumps(register, ensure_ascii=False)


def test_names_come_from_the_env_key(generated):
    """The server reports the key only (`icusepsisenvironment`), so a fresh capture is named from
    it whether it reached the env by class or by URL (one env, one name); `--name icu_sepsis`, as
    `generated/` has it, gives the words back."""
    icu = generated["icu"]
    assert icu.path.name == "icusepsis.py"
    assert icu.env_class.__name__ == "IcusepsisEnv"
    assert icu.module.environment_factory is icu.env_class
    from orlgen.names import class_name

    assert class_name("icu_sepsis", suffix="Env") == "IcuSepsisEnv"


@pytest.fixture(scope="module")
def icu_url():
    from orlgen.serve import ServerProcess

    with ServerProcess(ENVS["icu"]) as server:
        yield server.url


def _episode(generated: dict[str, Generated], url: str) -> Any:
    icu = generated["icu"]
    env = icu.env_class(base_url=url)
    env.reset(**icu.module.build_dataset(num_tasks=1)[0])
    return env, icu.methods()


def test_wire_name_keyword_is_accepted(generated, icu_url):
    env, methods = _episode(generated, icu_url)
    sent = methods["transfer"](env, **{"from": "ED", "to": "ICU"})
    assert sent == "[('from', 'ED'), ('to', 'ICU')]"


def test_keyword_parameter_reaches_the_server_under_its_wire_name(generated, icu_url):
    env, methods = _episode(generated, icu_url)
    name = next(p for p in inspect.signature(methods["transfer"]).parameters if p.rstrip("_") == "from")
    assert (
        methods["transfer"](env, **{name: "ED", "to": "ICU", "urgent": True})
        == "[('from', 'ED'), ('to', 'ICU'), ('urgent', True)]"
    )


def test_unicode_parameter_is_called_by_its_name(generated, icu_url):
    env, methods = _episode(generated, icu_url)
    assert methods["register_patient"](env, **{"名前": "Aiko", "age": 40}) == "registered Aiko (40)"


# ── size, lint, types, diff ───────────────────────────────────────────────────


def test_helpdesk_prompt_is_no_larger_than_its_raw_schema(generated):
    """Passes today (6744 vs 8503 characters); the rewrite must keep it (issue 11's done-when)."""
    from bench.fidelity import prompt_chars, raw_prompt_chars

    helpdesk = generated["helpdesk"]
    assert prompt_chars(list(helpdesk.seen().values())) <= raw_prompt_chars(helpdesk.snapshot.tools)


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(REPO), "HOME": str(cwd)}
    return subprocess.run(command, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_generated_modules_pass_ruff(generated):
    paths = [str(g.path) for g in generated.values()]
    ruff = str(Path(sys.executable).parent / "ruff")
    result = _run(
        ruff, "check", "--isolated", "--extend-select", "I", "--no-cache", *paths, cwd=generated["icu"].path.parent
    )
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.slow
def test_generated_modules_pass_mypy(generated, tmp_path):
    paths = [str(g.path) for g in generated.values()]
    result = _run(
        sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), *paths, cwd=generated["icu"].path.parent
    )
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.slow
def test_checked_in_modules_pass_ruff_and_mypy(tmp_path):
    """Every module in generated/, the mixture included, as a reviewer's CI would lint them."""
    paths = [str(p) for p in sorted((REPO / "generated").glob("*.py"))]
    ruff = _run(
        str(Path(sys.executable).parent / "ruff"),
        "check",
        "--isolated",
        "--extend-select",
        "I",
        "--no-cache",
        *paths,
        cwd=tmp_path,
    )
    # `mypy --strict generated/` in a project of the user's: no package around the directory (the
    # mixture finds its members itself), and orlgen found as installed (an editable install is a
    # path mypy reads), with no MYPYPATH or PYTHONPATH to help.
    project = tmp_path / "project"
    shutil.copytree(REPO / "generated", project / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    command = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "generated/"]
    mypy = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert (ruff.returncode, mypy.returncode) == (0, 0), ruff.stdout[-2000:] + mypy.stdout[-2000:]


def test_diff_reports_a_parameter_reorder_as_a_prompt_change(generated, tmp_path):
    from orlgen.review.files import write_files
    from orlgen.snapshot.model import load

    reordered = _capture("tests.support.envs.schemas:ReorderedWordGrid", tmp_path, name="wordgrid_reordered")
    # The same env at the same address, its parameters reordered: the target is not what is compared.
    original = load(generated["wordgrid"].snapshot_path)
    moved = load(reordered.snapshot_path).model_copy(update={"target": original.target})
    write_files(moved.canonical().files(reordered.snapshot_path))
    result = _run(
        sys.executable,
        "-m",
        "orlgen",
        "diff",
        str(generated["wordgrid"].snapshot_path),
        "--against",
        str(reordered.snapshot_path),
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr  # a reorder breaks no call: parameters are keyword-only
    changes = json.loads(result.stdout)["changes"]
    assert any(c["category"] == "PROMPT" and "place_letter" in c["subject"] for c in changes), changes
