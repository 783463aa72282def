"""`orlgen eval`, behind its click command: load, preflight, play, write, report."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import click
from orlgen.runtime.connection import redact, secrets_from_env

from . import report
from .errors import EvalError
from .policy import ChatEndpoint, Policy
from .records import STDOUT, Writer
from .rollout import POLICY_ERROR, Rollout, Settings
from .run import execute, model_never_answered, plan, preflight
from .stats import summarize
from .subject import Member, load

INTERRUPTED = 130


@dataclass(frozen=True)
class Options:
    subject: str
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    hf_model: str | None = None
    splits: tuple[str, ...] = ()
    num_tasks: int | None = None
    k: int = 1
    max_turns: int = 10
    max_tokens: int = 512
    concurrency: int = 8
    seed: int = 0
    temperature: float = 1.0
    env: str | None = None
    env_url: str | None = None
    env_overrides: Mapping[str, str] | None = None  # `--env-override KEY=VALUE`: never written anywhere
    pass_threshold: float | None = None
    style: Literal["text", "json"] = "text"
    out: Path | None = None
    turn_timeout: float = 300.0
    max_tool_calls: int = 64


def run(options: Options) -> int:
    """The exit code: 0 when the run completed (whatever the rewards), 130 when interrupted.
    Raises an `OrlgenError` (exit 2) when nothing can run: bad arguments, an unloadable module,
    an unreachable endpoint or environment, or an endpoint that answered no rollout at all."""
    policy = _policy(options)
    members = load(options.subject, options.env)
    jobs = plan(members, options.splits, options.num_tasks, options.k, options.seed)
    if not jobs:
        raise EvalError("nothing to evaluate: the chosen splits have no tasks")
    policy.check()
    preflight(members, options.env_url, options.env_overrides)
    secrets = _secrets(members, policy)
    writer = Writer(options.out, options.model or options.hf_model or "", secrets)
    settings = Settings(
        max_turns=options.max_turns, temperature=options.temperature, max_tool_calls=options.max_tool_calls
    )
    try:
        with _progress(len(jobs)) as advance:

            def done(rollout: Rollout) -> None:
                writer.write(rollout)
                advance(1)

            finished = execute(
                jobs,
                policy,
                settings,
                concurrency=options.concurrency,
                env_url=options.env_url,
                on_done=done,
                env_overrides=options.env_overrides,
            )
    finally:
        writer.close()
    if model_never_answered(finished.rollouts):
        raise EvalError(_no_answer(finished.rollouts, secrets))
    stats = summarize(finished.rollouts, options.k, options.pass_threshold)
    summary = {
        "subject": options.subject,
        "model": options.model or options.hf_model,
        "rollouts": len(finished.rollouts),
        "planned": len(jobs),
        "wall_s": finished.wall_s,
        "rollouts_per_s": len(finished.rollouts) / finished.wall_s if finished.wall_s > 0 else 0.0,
        "concurrency": options.concurrency,
        "interrupted": finished.interrupted,
        "out": str(options.out) if options.out else None,
    }
    render = report.as_json if options.style == "json" else report.text
    table = sys.stderr if str(options.out) == STDOUT else sys.stdout  # stdout holds the rows
    table.write(render(stats, summary))
    table.flush()
    if finished.interrupted:
        click.echo("orlgen: interrupted", err=True)
        return INTERRUPTED
    return 0


def _secrets(members: list[Member], policy: Policy) -> list[str]:
    """Every secret value this run holds, to be masked wherever a server's or the endpoint's
    words are kept: the endpoint's key, the platform key, each environment's secrets (the
    variables its snapshot names, read as its adapter reads them)."""
    names = {"OPENREWARD_API_KEY", *(name for m in members for name in m.secret_names)}
    key = getattr(policy, "api_key", None)
    return [*secrets_from_env(sorted(names)).values(), *([key] if key else [])]


def _no_answer(rollouts: list[Rollout], secrets: list[str]) -> str:
    failed = [r for r in rollouts if r.outcome == POLICY_ERROR]
    return redact(
        f"the model endpoint answered none of {len(failed)} rollout(s), so the run stopped: "
        f"{failed[0].reason or 'no reason given'}",
        secrets,
    )


def _policy(options: Options) -> Policy:
    if options.hf_model and (options.base_url or options.model):
        raise EvalError("pass --hf-model, or --base-url with --model, not both")
    if options.hf_model:
        from .hf import LocalModel

        return LocalModel(options.hf_model, max_tokens=options.max_tokens)
    if not (options.base_url and options.model):
        raise EvalError("a model is needed: --base-url URL --model NAME, or --hf-model PATH")
    return ChatEndpoint.from_env(
        options.base_url,
        options.model,
        options.api_key_env,
        max_tokens=options.max_tokens,
        turn_timeout=options.turn_timeout,
    )


@contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, only when a person watches it (stderr is a terminal)."""
    if not sys.stderr.isatty():
        yield lambda n: None
        return
    with click.progressbar(length=total, label="rollouts", file=sys.stderr, show_pos=True, show_eta=True) as bar:
        yield bar.update
