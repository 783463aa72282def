"""A contract per trainer: each trainer's module states its own trainer's contract, and a module
asking a newer one than this runtime speaks gets the one-line pip message at import, before
anything else of the runtime or its framework is imported. The call without `trainer` is TRL's."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from orlgen import __version__
from orlgen.runtime import contract

from tests.support.modules import REPO, load_module

GENERATED = REPO / "generated"
REGENERATE = "or regenerate it with `orlgen generate`"
# trainer → its checked-in helpdesk module, and how its contract reads in the one line
MODULES = {
    "trl": ("helpdesk.py", ""),
    "verifiers": ("helpdesk_verifiers.py", "verifiers "),
    "skyrl": ("helpdesk_skyrl.py", "skyrl "),
}


def _asking(tmp_path: Path, name: str, number: int) -> Path:
    """A real generated module (and the models file it imports) with its contract number edited."""
    shutil.copyfile(GENERATED / "helpdesk_models.py", tmp_path / "helpdesk_models.py")
    text = (GENERATED / name).read_text(encoding="utf-8")
    call = re.compile(r"require_contract\((\d+), __file__, ")
    assert len(call.findall(text)) == 1, f"{name} has no contract gate"
    path = tmp_path / name
    path.write_text(call.sub(f"require_contract({number}, __file__, ", text), encoding="utf-8")
    return path


@pytest.mark.parametrize("trainer", list(MODULES))
def test_a_module_asking_a_newer_contract_of_its_trainer_gets_the_pip_line(tmp_path: Path, trainer: str):
    name, series = MODULES[trainer]
    newer = contract.CONTRACTS[trainer] + 1
    path = _asking(tmp_path, name, newer)
    with pytest.raises(ImportError) as caught:
        load_module(path)
    assert str(caught.value) == (
        f"{path} needs orlgen's {series}runtime contract {newer}; orlgen {__version__} is installed and "
        f"speaks {contract.SUPPORTED[trainer][0]} to {contract.CONTRACTS[trainer]}: "
        f"pip install 'orlgen>={__version__}' {REGENERATE}"
    )


def test_the_call_without_a_trainer_is_trls():
    contract.require_contract(contract.CONTRACT, "m.py", "0.2.0")
    assert contract.CONTRACT == contract.CONTRACTS["trl"]
    with pytest.raises(ImportError, match=r"^m\.py needs orlgen's runtime contract 9; "):
        contract.require_contract(9, "m.py", "9.0.0")


def test_one_trainers_contract_moves_without_the_others(monkeypatch: pytest.MonkeyPatch):
    """A runtime whose verifiers shim dropped contract 2 refuses verifiers modules of 2, naming
    the orlgen that wrote them, and still runs TRL's and skyrl's."""
    monkeypatch.setitem(contract.SUPPORTED, "verifiers", range(3, 5))
    with pytest.raises(ImportError) as caught:
        contract.require_contract(2, "m_verifiers.py", "0.2.0", trainer="verifiers")
    assert str(caught.value) == (
        f"m_verifiers.py needs orlgen's verifiers runtime contract 2; orlgen {__version__} is installed and "
        f"speaks 3 to 4: pip install 'orlgen==0.2.0' {REGENERATE}"
    )
    contract.require_contract(2, "m.py", "0.2.0")
    contract.require_contract(2, "m_skyrl.py", "0.2.0", trainer="skyrl")


def test_a_trainer_this_runtime_does_not_know_is_a_newer_orlgens():
    with pytest.raises(ImportError) as caught:
        contract.require_contract(1, "m_openrlhf.py", "0.5.0", trainer="openrlhf")
    assert str(caught.value) == (
        f"m_openrlhf.py needs orlgen's openrlhf runtime contract 1; orlgen {__version__} is installed and "
        f"speaks no openrlhf contract: pip install 'orlgen>=0.5.0' {REGENERATE}"
    )
