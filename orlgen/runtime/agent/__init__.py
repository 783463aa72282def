"""The agent shim: what every generated `<name>_agent.py` module shares. One episode function
for the trainers that drive an OpenAI-compatible endpoint (`run.episode_function`), its loop
(`loop`) and the bounded endpoint client (`endpoint`). Docs: docs/trainers-agent.md."""

from __future__ import annotations

from ..hermes import Tool
from .endpoint import Endpoint, EndpointError
from .loop import AgentEnv, Trajectory, dataset_builder
from .run import episode_function

__all__ = ["AgentEnv", "Endpoint", "EndpointError", "Tool", "Trajectory", "dataset_builder", "episode_function"]
