"""What generated modules import at training time, and `Episode`, the trainer-neutral core a
trainer's shim sits on (docs/design.md, "The runtime's layers"). Never imports the generator nor
the `openreward` SDK: it speaks ORS itself (`ors/`), importing aiohttp on the first request."""

from __future__ import annotations

from .coverage import COVERAGE
from .data.dataset import Column, DatasetError, DatasetSpec
from .data.reward import RewardRule
from .data.spec import EnvSpec, Target
from .episode import Episode, EpisodeState, Failure, Step
from .session.budget import set_max_sessions
from .session.connection import CallTimeout, ConfigError, Connection
from .surface import dataset_builder
from .trl.adapter import UNSET, DeploymentChanged, DriftError, EnvAdapter, tool_method
from .trl.group import group_reward
from .trl.mixture import mix, mixture_builder
from .trl.scoring import (
    final_message,
    outcome_reward,
    outcome_reward_with,
    scoring_callback,
    scoring_metrics,
    submit_final_message,
    summed_reward,
)
from .trl.tools import reward_funcs_getattr
from .types import JSONArray, JSONObject, ToolOutput

__all__ = [
    "COVERAGE",
    "UNSET",
    "CallTimeout",
    "Column",
    "ConfigError",
    "Connection",
    "DatasetError",
    "DatasetSpec",
    "DeploymentChanged",
    "DriftError",
    "EnvAdapter",
    "EnvSpec",
    "Episode",
    "EpisodeState",
    "Failure",
    "JSONArray",
    "JSONObject",
    "RewardRule",
    "Step",
    "Target",
    "ToolOutput",
    "dataset_builder",
    "final_message",
    "group_reward",
    "mix",
    "mixture_builder",
    "outcome_reward",
    "outcome_reward_with",
    "reward_funcs_getattr",
    "scoring_callback",
    "scoring_metrics",
    "set_max_sessions",
    "submit_final_message",
    "summed_reward",
    "tool_method",
]
