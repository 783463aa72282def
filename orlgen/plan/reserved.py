"""The names no tool method or model class may take: decided once, for every trainer's module.

A tool's method name is TRL's: in the TRL module the method is the tool (its attribute is what a
user's code calls), so only the names the TRL module and `EnvAdapter` bind are renamed (the wire
name is kept). The other trainers never define a method under that name where it could clash:
the verifiers module prefixes its Toolset's methods (`ors_<method>`, advertised under the shown
name, `orlgen.trainers.verifiers`), and a skyrl module's tools are a table, not methods. Model
classes are module-level in every trainer's module, so their reserved names are every trainer's.
Each set lives here, in the stage that decides names: the plan is built before any trainer is chosen.
"""

from __future__ import annotations

from orlgen import runtime
from orlgen.runtime.data.dataset import RESERVED_COLUMNS

# What the TRL templates may import, by module: `orlgen.render.models` imports those a module uses.
TRL_IMPORTS: dict[str, tuple[str, ...]] = {
    "collections.abc": ("Mapping", "Sequence"),
    "pathlib": ("Path",),
    "typing": ("Any", "ClassVar", "Literal"),
    "orlgen.runtime": tuple(runtime.__all__),
    "orlgen.runtime.siblings": ("siblings",),  # an env with several trainers: its models file
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


def _bound(imports: dict[str, tuple[str, ...]], own: tuple[str, ...]) -> frozenset[str]:
    """Every name a module binds at top level, whatever its tools: what its template may import,
    the models' imports, and the names the template binds itself."""
    return frozenset({*(name for members in imports.values() for name in members), *MODEL_IMPORTS, *own})


# Every name the TRL module binds at top level, whatever its tools. A tool method or a model
# class of the same name would shadow it: a method named `tool_method` replaces the decorator for
# the methods after it in the class body. tests/test_module_names.py holds this table, and the
# other trainers', to what the checked-in modules bind.
TRL_MODULE_NAMES = _bound(TRL_IMPORTS, TRL_GLOBALS)
# What a generated TRL class inherits and a tool method must not replace, as data (the plan does not
# import the TRL shim): TRL's special methods, the adapter's state and API, `spec` (which
# `EnvAdapter.__init_subclass__` sets on the class, over a method of that name) and what
# `EnvAdapter` defines beyond `object`. tests/test_models_file.py holds it equal to what the
# runtime's `EnvAdapter` really exposes, so it cannot go stale.
TRL_ADAPTER_NAMES = frozenset(
    {
        "__annotations__",
        "__copy__",
        "__dict__",
        "__module__",
        "__setstate__",
        "__weakref__",
        "_call_tool",
        "_score",
        "_submit_final_message",
        "error",
        "finished",
        "get_reward",
        "last_output",
        "metadata",
        "outcome",
        "reset",
        "reward",
        "rewards",
        "spec",
        "tool_calls",
        "tool_errors",
    }
)
TRL_METHODS = TRL_ADAPTER_NAMES | frozenset(dir(object))

# verifiers 0.4 (shared/TRAINERS.md section 2): what its template may import, and binds itself
# (besides the env's Toolset, Task and Taskset classes).
VERIFIERS_IMPORTS: dict[str, tuple[str, ...]] = {
    "pathlib": ("Path",),
    "typing": ("Any",),
    "orlgen.runtime": ("Column", "DatasetSpec", "EnvSpec", "RewardRule", "Target"),
    "orlgen.runtime.siblings": ("siblings",),
    "orlgen.runtime.verifiers": ("OrsTask", "OrsTaskset", "OrsToolset", "tool"),
}
VERIFIERS_GLOBALS = ("SNAPSHOT_SHA256", "SPEC", "SPLITS", "TARGET", "annotations", "require_contract")
VERIFIERS_MODULE_NAMES = _bound(VERIFIERS_IMPORTS, VERIFIERS_GLOBALS)
# skyrl-gym 0.4 (section 4): the same, the env class aside.
SKYRL_IMPORTS: dict[str, tuple[str, ...]] = {
    "pathlib": ("Path",),
    "orlgen.runtime": ("Column", "DatasetSpec", "EnvSpec", "RewardRule", "Target", "skyrl"),
    "orlgen.runtime.siblings": ("siblings",),
}
SKYRL_GLOBALS = (*VERIFIERS_GLOBALS, "SYSTEM_PROMPT", "TOOLS", "build_dataset", "register")
SKYRL_MODULE_NAMES = _bound(SKYRL_IMPORTS, SKYRL_GLOBALS)

# The agent module (docs/trainers-agent.md): the same, its tables and functions aside.
AGENT_IMPORTS: dict[str, tuple[str, ...]] = {
    "pathlib": ("Path",),
    "orlgen.runtime": ("Column", "DatasetSpec", "EnvSpec", "RewardRule", "Target", "agent"),
    "orlgen.runtime.siblings": ("siblings",),
}
AGENT_GLOBALS = (*VERIFIERS_GLOBALS, "CALLS", "ENV", "TOOLS", "build_dataset", "run_episode")
AGENT_MODULE_NAMES = _bound(AGENT_IMPORTS, AGENT_GLOBALS)

# verl 0.9 (docs/trainers-verl.md): the same, its table and functions aside.
VERL_IMPORTS: dict[str, tuple[str, ...]] = {
    "pathlib": ("Path",),
    "orlgen.runtime": ("Column", "DatasetSpec", "EnvSpec", "RewardRule", "Target", "verl"),
    "orlgen.runtime.siblings": ("siblings",),
}
VERL_GLOBALS = (*VERIFIERS_GLOBALS, "AGENT_NAME", "CALLS", "build_dataset")
VERL_MODULE_NAMES = _bound(VERL_IMPORTS, VERL_GLOBALS)

# Names a generated model class may not take, in any trainer's module.
RESERVED_CLASSES = (
    TRL_MODULE_NAMES | VERIFIERS_MODULE_NAMES | SKYRL_MODULE_NAMES | AGENT_MODULE_NAMES | VERL_MODULE_NAMES
)
# Names a tool method may not take (TRL's: see above).
RESERVED_METHODS = TRL_METHODS | TRL_MODULE_NAMES

# The columns each trainer puts in a dataset row beside the task's fields. The columns are the
# plan's, one set for every trainer's module, so a task field named like any of them is stored
# under the `task_` prefix (`orlgen.plan.columns`) rather than collide in one trainer's rows. TRL's
# are the runtime's own; verifiers nests the fields under `task`; a skyrl row holds `env_class` (the
# env SkyRL makes), and SkyRL's generator sets `max_turns` in the extras it hands the env, over a
# column of that name (shared/TRAINERS.md section 4).
TRAINER_COLUMNS: dict[str, tuple[str, ...]] = {
    "trl": RESERVED_COLUMNS,
    "verifiers": (),
    "skyrl": ("prompt", "env_class", "max_turns"),
    "agent": (),
    "verl": (),  # a verl row keeps the task's place in `extra_info`, no task field as a column
}
RESERVED_COLUMN_NAMES = frozenset(name for columns in TRAINER_COLUMNS.values() for name in columns)
