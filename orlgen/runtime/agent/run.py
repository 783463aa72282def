"""`run_episode`, the episode function of every agent module: the agent loop (`loop.play`)
against an OpenAI-compatible endpoint (`endpoint.Endpoint`), with the signature every shim and
test calls it by."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from ..hermes import MAX_TOOL_CALLS_PER_TURN
from .endpoint import MAX_ANSWER_BYTES, Endpoint
from .loop import DEFAULT_MAX_TURNS, AgentEnv, Chat, Message, Trajectory, play

RunEpisode = Callable[..., Coroutine[Any, Any, Trajectory]]


def endpoint_chat(endpoint: Endpoint, model: str, sampling: Mapping[str, Any]) -> Chat:
    """One episode's turns asked of `endpoint`: `model`, the conversation, the tools shown (none:
    no `tools` key) and the sampling parameters. A `seed` among them is the first turn's; each
    later turn takes the next, so turns differ and a rerun repeats them."""
    seed = sampling.get("seed")
    turns = itertools.count()

    async def chat(messages: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": messages, **sampling}
        if seed is not None:
            body["seed"] = int(seed) + next(turns)
        if tools:
            body["tools"] = tools
        return await endpoint.complete(body)

    return chat


def episode_function(bound: AgentEnv, module: str) -> RunEpisode:
    """The `run_episode` of the agent module named `module`, bound to its env."""

    async def run_episode(
        task: Mapping[str, Any] | int,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        http_client: Any = None,
        split: str | None = None,
        max_tool_calls: int = MAX_TOOL_CALLS_PER_TURN,
        turn_timeout: float = 300.0,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        env: Mapping[str, Any] | None = None,
        **sampling: Any,
    ) -> Trajectory:
        """Play one episode of the env against an OpenAI-compatible endpoint; its `Trajectory`.

        The model is shown `TOOLS` (those this task's session offers) and answers in
        `tool_calls`; each call is validated before any request, and the session is deleted on
        every path, cancellation included. The reward is the env's rule's, None when unscored.

        Args:
            task: A row of `build_dataset()`, or a task index of `split`.
            base_url: The endpoint, e.g. `http://127.0.0.1:8000/v1` (`/chat/completions` is added).
            model: The model name the endpoint serves.
            api_key: Sent as `Authorization: Bearer ...`, to `base_url`'s origin only.
            max_turns: Model turns at most.
            http_client: An `httpx.AsyncClient` to send the requests with (AReaL hands one);
                default: aiohttp.
            split: The split of a task given by index (default: `train`, else the first split).
            max_tool_calls: Tool calls one turn may run; the rest are not run and count as the
                model's failed calls.
            turn_timeout: Seconds one model turn may take, retries included.
            max_answer_bytes: The largest answer read from the endpoint.
            env: Options of the ORS session (`orlgen.runtime.Episode`): `base_url` (the env's
                server; default: the module's URL variable, then its target), `api_key`,
                `secrets`, `env_overrides`, `timeout`, `reward`, ...
            **sampling: Sent with each request as they are (`temperature`, `max_tokens`,
                `logprobs`, `stream`, ...); a `seed` is the first turn's, each later turn the next.
        """
        endpoint = Endpoint(
            base_url,
            api_key=api_key,
            http_client=http_client,
            turn_timeout=turn_timeout,
            max_answer_bytes=max_answer_bytes,
        )
        return await play(
            bound,
            task,
            endpoint_chat(endpoint, model, sampling),
            split=split,
            max_turns=max_turns,
            max_tool_calls=max_tool_calls,
            episode_options=env,
        )

    run_episode.__module__ = module
    run_episode.__qualname__ = "run_episode"
    return run_episode
