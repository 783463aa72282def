"""The JSON schema TRL shows the model for every checked-in tool, as `get_json_schema` reads it,
is the one recorded in tool_schemas.json (written from orlgen 0.1.0's modules, before the hints
became `JSONObject`/`ToolOutput` for mypy --strict): typing the modules changed nothing the model reads."""

from __future__ import annotations

import inspect
import json

from transformers.utils import get_json_schema

from tests.support.modules import REPO, load_module, trl_modules

RECORDED = json.loads((REPO / "tests" / "support" / "tool_schemas.json").read_text())


def test_every_generated_tool_shows_the_model_the_recorded_schema():
    seen = {}
    for path in trl_modules():
        env = getattr(load_module(path), "environment_factory", None)
        if isinstance(env, type):  # a mixture's is a dict of its members' classes
            seen[path.stem] = {
                name: get_json_schema(func)
                for name, func in inspect.getmembers(env, predicate=inspect.isfunction)
                if name not in ("reset", "get_reward") and not name.startswith("_")
            }
    assert sum(len(tools) for tools in seen.values()) == 31
    assert seen == RECORDED
