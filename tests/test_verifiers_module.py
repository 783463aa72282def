"""The checked-in verifiers module (`generated/helpdesk_verifiers.py`, configured in pyproject.toml)
is owned by `orlgen check` like the TRL module: a hand edit is a finding naming it, with its diff.
The module run by verifiers itself is tests/test_verifiers.py (slow, its own venv)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support.cli import invoke

REPO = Path(__file__).resolve().parent.parent


def test_check_finds_a_hand_edited_verifiers_module(tmp_path):
    gen = Path(
        shutil.copytree(REPO / "generated", tmp_path / "generated", ignore=shutil.ignore_patterns("__pycache__"))
    )
    module = gen / "helpdesk_verifiers.py"
    text = module.read_text()
    assert "        return await self.call(" in text
    module.write_text(
        text.replace("        return await self.call(", "        print('debug')\n        return await self.call(", 1)
    )

    result = invoke("check", gen)

    assert result.exit_code == 1
    findings = [line.split(": ", 1) for line in result.stdout.splitlines() if line.startswith(str(gen))]
    assert [(Path(path).name, cause.split(" ")[0]) for path, cause in findings] == [
        ("helpdesk_verifiers.py", "hand-edited")
    ]
    assert "\n-        print('debug')\n" in result.stdout


def test_a_tool_named_like_the_toolsets_own_names_keeps_its_names():
    """`call` is what every tool method of the verifiers Toolset returns through, `run` starts its
    server and `tool` is the decorator in its class body: the Toolset's methods are prefixed
    (`ors_`), so such a tool replaces none of them, and its method name in the TRL module and the
    name the model is shown stay its own."""
    from orlgen.plan.planner import plan
    from orlgen.render.jobs import render_module

    from tests.test_plan import snapshot, tool

    wires = ("call", "tool", "episode", "run", "setup", "state")
    found = snapshot(*(tool(None, name=name) for name in wires))
    assert {t.method for t in plan(found).tools} == set(wires)  # TRL's attribute names are the wire names
    source = render_module(found, None, "verifiers")
    for name in wires:
        assert f'@tool("{name}", None)' in source and f"async def ors_{name}(self, /" in source
        assert f"def {name}(" not in source
