"""`EnvSpec`: everything a generated module tells the runtime about its environment.

This is the data half of the runtime contract (docs/design.md "Runtime contract"; the version
half is `orlgen.runtime.contract`). Each generated module builds one `SPEC` from its snapshot,
where a reviewer reads it, and hands it to its adapter class (`class EchoEnv(EnvAdapter,
spec=SPEC)`) and its `build_dataset`. The runtime reads these fields and nothing else of the
module, so a field is added or changed only with a new contract version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .dataset import DatasetSpec
from .reward import RewardRule

TaskKey = tuple[str, int]  # (split, index)


@dataclass(frozen=True)
class Target:
    """Where the snapshot was captured: mirrors `orlgen.snapshot.model.Target`, without importing it."""

    kind: Literal["catalog", "url", "module"]
    value: str
    env: str


@dataclass(frozen=True)
class EnvSpec:
    """One environment as captured: where it is, its tools, its reward rule and its tasks."""

    target: Target  # where the snapshot was captured, and where sessions go by default
    env_var: str  # the environment variable whose URL overrides the target
    tool_fingerprints: Mapping[str, tuple[bool, str]]  # wire name → (shared, fingerprint): the drift guard
    dataset: DatasetSpec  # the snapshot file, its hash, split sizes and the task columns
    terminal_tool: str | None = None  # wire name of the env's @terminal tool, if any
    reward_rule: RewardRule = field(
        default_factory=RewardRule
    )  # the env's rule, from the snapshot: what every trainer scores by
    probed_tasks: tuple[TaskKey, ...] = ()  # the tasks capture probed, when a tool is task-only
    offered_on: Mapping[str, tuple[TaskKey, ...]] = field(
        default_factory=dict
    )  # task-only tool → probed tasks offering it
    secret_names: tuple[str, ...] = ()  # secrets forwarded from the environment when `secrets=` is not given
    deployment: Mapping[str, str] | None = None  # as captured; compared with /version (`runtime.provenance`)
    conversation: bool = False  # the env serves its prompt as messages (get_messages)
    toolset: str | None = None  # the built-in toolset sessions open with, as captured (`--toolset`)
    score_group: bool = False  # the env scores groups of completions (`/score_group`: `group_reward`)

    def __post_init__(self) -> None:
        # A contract-2 module names its rule by a string ("summed"): the rule of that reduction.
        object.__setattr__(self, "reward_rule", RewardRule.of(self.reward_rule))

    @property
    def default_split(self) -> str:
        """The split `build_dataset` draws from by default: `train` when there is one."""
        splits = list(self.dataset.num_tasks)
        return "train" if "train" in splits else (splits or ["train"])[0]
