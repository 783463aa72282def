"""The trainer registry: one neutral plan, each trainer's module rendered from it."""

from __future__ import annotations

import pytest
from orlgen.errors import OrlgenError
from orlgen.trainers import TRAINER_NAMES, trainer


def test_an_unknown_trainer_is_one_line_naming_the_valid_ones():
    with pytest.raises(OrlgenError, match=r"^unknown trainer 'trlx': expected one of trl, verifiers, skyrl$"):
        trainer("trlx")


def test_the_trl_trainer_is_todays_module():
    trl = trainer("trl")
    assert (trl.name, trl.suffix, trl.module_template, trl.mixture_template) == (
        "trl",
        "",
        "module.py.jinja",
        "mixture.py.jinja",
    )
    assert trl.module_name("helpdesk") == "helpdesk" and (trl.templates / trl.module_template).is_file()
    assert TRAINER_NAMES == ("trl", "verifiers", "skyrl")
