"""The names no tool method or model class may take, in any trainer's module: decided once.

A tool's method name is the same in every trainer's module (`orlgen.trainers`), so it must be
valid in all of them: a name one trainer's module or base class binds is renamed like a keyword
(the wire name is kept) in every module. Each trainer's set lives here, in the stage that decides
names, not beside its templates: the plan is built before any trainer is chosen.

Adding a name to a set renames the tools of that name in every trainer's module (the TRL module
of an env with such a tool changes): `tests/test_trainers.py` holds the checked-in modules' bytes.
"""

from __future__ import annotations

from orlgen import runtime
from orlgen.runtime.adapter import STATE_ATTRIBUTES, EnvAdapter

# What the TRL templates may import, by module: `orlgen.render.models` imports those a module uses.
TRL_IMPORTS: dict[str, tuple[str, ...]] = {
    "collections.abc": ("Mapping", "Sequence"),
    "pathlib": ("Path",),
    "typing": ("Any", "ClassVar", "Literal"),
    "orlgen.runtime": tuple(runtime.__all__),
}
# What datamodel-code-generator's models import (the bundle it is given needs no other name).
MODEL_IMPORTS = ("Annotated", "Any", "BaseModel", "ConfigDict", "Field", "Literal", "RootModel")
# What the TRL module template binds itself.
TRL_GLOBALS = (
    "SNAPSHOT_SHA256",
    "SPEC",
    "SPLITS",
    "TARGET",
    "TOOLS",
    "annotations",
    "build_dataset",
    "environment_factory",
    "require_contract",
    "reward_funcs",
)
# Every name the TRL module binds at top level, whatever its tools. A tool method or a model
# class of the same name would shadow it: a method named `tool_method` replaces the decorator for
# the methods after it in the class body. tests/test_module_names.py holds this table to what the
# checked-in modules bind.
TRL_MODULE_NAMES = frozenset(
    {*(name for members in TRL_IMPORTS.values() for name in members), *MODEL_IMPORTS, *TRL_GLOBALS}
)
# TRL's special methods, the adapter's state and API, `spec` (which `EnvAdapter.__init_subclass__`
# sets on the class, over a method of that name).
TRL_METHODS = frozenset({"reset", "get_reward", "spec", *STATE_ATTRIBUTES, *dir(EnvAdapter)})

# verifiers 0.4 (shared/TRAINERS.md section 2): a tool is a method of a `vf.Toolset` subclass,
# whose server lifecycle and per-rollout state are methods and attributes of the same class; the
# module binds `vf` and pydantic's names. The verifiers trainer completes this set.
# orlgen.runtime.verifiers.OrsToolset adds `call`, `episode`, `SPEC` and `NAME` (a tool method `call`
# would replace the one every tool method calls); the module binds the shim's names, and `tool`,
# the decorator: a method named `tool` would replace it for the methods after it in the class body.
VERIFIERS_METHODS = frozenset(
    {"TOOL_PREFIX", "config", "register", "run", "setup", "setup_task", "state", "server_name"}
    | {"call", "episode", "SPEC", "NAME"}
)
VERIFIERS_MODULE_NAMES = frozenset(
    {"vf", "Annotated", "Field", "BaseModel", "tool", "OrsTask", "OrsTaskset", "OrsToolset"}
    | {"Column", "DatasetSpec", "EnvSpec", "Target"}
)
# skyrl-gym 0.4 (section 4): none. A skyrl module defines no method per tool: its tools are a
# table (`TOOLS`, keyed by the name the model calls) that the shim dispatches parsed calls through.
# The module binds `skyrl` (orlgen.runtime.skyrl), `SYSTEM_PROMPT` and `register`.
SKYRL_METHODS: frozenset[str] = frozenset()
SKYRL_MODULE_NAMES = frozenset({"skyrl", "SYSTEM_PROMPT", "register"})

# Names a generated model class may not take, in any trainer's module.
RESERVED_CLASSES = TRL_MODULE_NAMES | VERIFIERS_MODULE_NAMES | SKYRL_MODULE_NAMES
# Names a tool method may not take, in any trainer's module.
RESERVED_METHODS = TRL_METHODS | VERIFIERS_METHODS | SKYRL_METHODS | RESERVED_CLASSES
