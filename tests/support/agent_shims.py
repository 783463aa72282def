"""The AReaL and ART shims of docs/trainers-agent.md, as the doc shows them (its AReaL and ART code
blocks are excerpts of this file: `tests/test_agent_shims.py` checks both ways).

Each takes an agent module's `run_episode` and a row of its `build_dataset()`. The AReaL shim runs
in any venv holding orlgen's runtime (no `areal` import); the ART shim imports `art` and openai's
types where it runs, so this file imports in both the main venv and the ART venv (Python 3.12).
"""

from __future__ import annotations

import os
from typing import Any


class Unscored(RuntimeError):
    """The env gave the episode no reward: a trainer drops it instead of training on a 0.0 the
    model did not earn (AReaL rejects the trajectory; ART records it in `group.exceptions`)."""


class EpisodeWorkflow:
    """AReaL 1.0.4: any class with `async run(data, **extra_kwargs)` is a workflow. `data` is a row
    of the agent module's `build_dataset()`; `options` go to `run_episode` (`env`, `max_turns`,
    sampling parameters...). It pickles (`run_episode` by reference), as subproc mode needs."""

    def __init__(self, run_episode: Any, model: str = "default", **options: Any) -> None:
        self.run_episode, self.model, self.options = run_episode, model, options

    async def run(self, data: dict[str, Any], **extra_kwargs: Any) -> float:
        trajectory = await self.run_episode(
            data,
            base_url=extra_kwargs.get("base_url") or os.environ["OPENAI_BASE_URL"],  # inline, else subproc mode
            api_key=extra_kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY"),
            http_client=extra_kwargs.get("http_client"),
            model=self.model,
            **self.options,
        )
        if trajectory.reward is None:  # AReaL rejects a trajectory whose run() raises
            raise Unscored(f"{trajectory.split}[{trajectory.task_index}] unscored: {trajectory.stop}")
        return float(trajectory.reward)


async def rollout(model: Any, scenario: dict[str, Any], *, run_episode: Any, **options: Any) -> Any:
    """ART 0.5.23: one `art.Trajectory` of `scenario` (a row of the agent module's `build_dataset()`)
    played by `model` (an `art.Model` or a registered `art.TrainableModel`); `Unscored` when the env
    gave no reward (`art.gather_trajectory_groups(..., max_exceptions=...)` keeps it out)."""
    import art
    from openai.types.chat.chat_completion import Choice

    client = model.openai_client()  # raises until a TrainableModel is registered
    trajectory = await run_episode(
        scenario,
        base_url=str(client.base_url),
        api_key=client.api_key,
        model=model.get_inference_name(),
        **options,
    )
    if trajectory.reward is None:
        raise Unscored(f"{trajectory.split}[{trajectory.task_index}] unscored: {trajectory.stop}")
    return art.Trajectory(
        messages_and_choices=[  # ART trains only Choice items: the endpoint's choice behind each turn
            message if choice is None else Choice.model_validate(choice)
            for message, choice in zip(trajectory.messages, trajectory.choices, strict=True)
        ],
        tools=trajectory.tools,
        reward=trajectory.reward,
        metrics=trajectory.metrics,
        metadata={"split": trajectory.split, "task_index": trajectory.task_index, "stop": trajectory.stop},
    )
