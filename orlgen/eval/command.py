"""`orlgen eval`, behind its click command: load, preflight, play, write, report."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import click
from orlgen.runtime.hermes import MAX_TOOL_CALLS_PER_TURN
from orlgen.runtime.ors.secrets import secrets_from_env
from orlgen.runtime.redaction import redact

from .. import __version__
from ..disk import write_atomic
from ..runtime.errors import first_line
from . import report, rundir
from .cache import Cache
from .errors import EvalError, Unreachable
from .html import write_report
from .policy import ChatEndpoint, Policy
from .progress import Progress
from .records import STDOUT, Writer
from .rollout import ENV_ERROR, POLICY_ERROR, Rollout, Settings
from .run import Finished, Job, execute, in_plan_order, model_never_answered, plan, preflight
from .stats import SplitStats, summarize, task_filter
from .subject import Member, load
from .upload import Target, run_info, upload

INTERRUPTED = 130


@dataclass(frozen=True)
class Options:
    subject: str | None
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None  # None: OPENAI_API_KEY
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
    max_tool_calls: int = MAX_TOOL_CALLS_PER_TURN
    # A run kept and continued (docs/eval.md: run directories, resume, per task, cache, progress).
    resume: str | None = None  # a run directory; "" for --out's
    by_task: bool = False
    emit_task_filter: Path | None = None
    cache: Path | None = None
    progress: bool = False
    # --upload (upload.py)
    upload: str | None = None
    upload_timeout: float = 30.0


@dataclass
class Sink:
    """Where this session's rows go, and the rows an earlier session of the run left."""

    writer: Writer
    carried: list[rundir.Row]

    def rows(self) -> list[dict[str, Any]]:
        """Every row of the run as written (secrets masked): the carried ones, then this
        session's (kept by the writer when they are to be uploaded)."""
        return [row.data for row in self.carried] + self.writer.rows


def run(options: Options) -> int:
    """The exit code: 0 when the run completed (whatever the rewards), 130 when interrupted.
    Raises an `OrlgenError` (exit 2) when nothing can run: bad arguments, an unloadable module,
    an unreachable endpoint or environment, a run directory that cannot be started or resumed,
    or an endpoint that answered no rollout at all; and, after the rows and the table, when an
    environment failed during the run (`_env_failed`)."""
    options, stored = _resumed(options)
    if options.emit_task_filter is not None and options.emit_task_filter.is_dir():
        raise EvalError(f"--emit-task-filter {options.emit_task_filter} is a directory: name a file")
    policy = _policy(options)
    assert options.subject is not None  # _resumed refuses a run without one
    target = Target.from_env() if options.upload else None  # no key: stop before anything runs
    members = load(options.subject, options.env)
    if not isinstance(policy, ChatEndpoint) and any(member.adapter is None for member in members):
        raise EvalError(
            f"{options.subject} is an agent module: its episodes ask an OpenAI-compatible endpoint, "
            "pass --base-url and --model (--hf-model plays TRL modules)"
        )
    jobs = plan(members, options.splits, options.num_tasks, options.k, options.seed)
    if not jobs:
        raise EvalError("nothing to evaluate: the chosen splits have no tasks")
    config = _config(options, members)
    if stored is not None and (changed := rundir.difference(stored, config)):
        raise EvalError(f"--resume {options.out}: refused, the run differs: {changed}")
    if options.cache is None:  # a cached run may need no endpoint at all
        policy.check()
    preflight(members, options.env_url, options.env_overrides)
    secrets = _secrets(members, policy)
    sink = _sink(options, config, stored, jobs, secrets)
    kept = {row.rollout.key for row in sink.carried}
    finished = _play(options, policy, sink.writer, [job for job in jobs if job.key not in kept])
    if rundir.is_run_dir(options.out):
        assert options.out is not None
        write_report(options.out)
    if model_never_answered(finished.rollouts):
        raise EvalError(_no_answer(finished.rollouts, secrets))
    rollouts = in_plan_order([*(row.rollout for row in sink.carried), *finished.rollouts], jobs)
    stats = summarize(rollouts, options.k, options.pass_threshold)
    if options.emit_task_filter is not None:
        _emit_task_filter(options.emit_task_filter, stats, members)
    _print(options, stats, _summary(options, rollouts, len(jobs), finished))
    if finished.interrupted:
        if target is not None:
            click.echo("orlgen: nothing uploaded: the run was interrupted (--resume uploads all its rows)", err=True)
        click.echo("orlgen: interrupted", err=True)
        return INTERRUPTED
    if (failed := _env_failed(options, members, finished.rollouts)) is not None:
        raise EvalError(redact(failed + ("; nothing uploaded" if target is not None else ""), secrets))
    if target is not None:  # every row of the run, the carried ones too: a run is uploaded once it is whole
        _upload(options, target, sink.rows())
    return 0


def _play(options: Options, policy: Policy, writer: Writer, jobs: list[Job]) -> Finished:
    """Play `jobs`, each row written as its rollout finishes, the progress line kept current."""
    settings = Settings(
        max_turns=options.max_turns, temperature=options.temperature, max_tool_calls=options.max_tool_calls
    )
    progress = Progress(len(jobs), sys.stderr, terminal=sys.stderr.isatty()) if _shows(options) else None

    def done(rollout: Rollout) -> None:
        writer.write(rollout)
        if progress is not None:
            progress.update(rollout)

    try:
        return execute(
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
        if progress is not None:
            progress.close()


def _env_failed(options: Options, members: list[Member], rollouts: list[Rollout]) -> str | None:
    """The line saying an environment failed during this session, or None. Failed means some of
    its rollouts ended in an environment error and it cannot be reached now (probed as before
    the run): a server that died mid-run. A live env that failed some tasks is the run's result,
    counted in the table, not a failed run."""
    for member in members:
        failed = [r for r in rollouts if r.env == member.name and r.outcome == ENV_ERROR]
        if not failed:
            continue
        try:
            preflight([member], options.env_url, options.env_overrides)
        except Unreachable:
            played = sum(r.env == member.name for r in rollouts)
            again = f"--resume {options.out}" if rundir.is_run_dir(options.out) else "a run with --out DIR --resume"
            first = first_line(failed[0].reason or "no reason given")[:300]
            return (
                f"environment {member.name} failed during the run: {len(failed)} of {played} rollouts ended "
                f"env_error (first: {first}) and it cannot be reached now; the rows are kept: {again} plays them again"
            )
    return None


def _summary(options: Options, rollouts: list[Rollout], planned: int, finished: Finished) -> dict[str, Any]:
    """The run's line under the table: every row of the run, and this session's pace."""
    return {
        "subject": options.subject,
        "model": options.model or options.hf_model,
        "rollouts": len(rollouts),
        "planned": planned,
        "played": len(finished.rollouts),
        "wall_s": finished.wall_s,
        "rollouts_per_s": len(finished.rollouts) / finished.wall_s if finished.wall_s > 0 else 0.0,
        "concurrency": options.concurrency,
        "interrupted": finished.interrupted,
        "out": str(options.out) if options.out else None,
    }


def _print(options: Options, stats: list[SplitStats], summary: dict[str, Any]) -> None:
    table = sys.stderr if str(options.out) == STDOUT else sys.stdout  # stdout holds the rows
    if options.style == "json":
        table.write(report.as_json(stats, summary))
    else:
        table.write(report.text(stats, summary, by_task=options.by_task))
    table.flush()


def _resumed(options: Options) -> tuple[Options, dict[str, Any] | None]:
    """`options` for this session, and the stored configuration when it resumes a run: with no
    SUBJECT, the run's own settings (and where it reached the env and the key, unless given
    again); with one, the command line, later compared with the stored settings."""
    if options.resume is None:
        if options.subject is None:
            raise EvalError("a SUBJECT is needed (a generated module or snapshot), or --resume DIR")
        return options, None
    directory = Path(options.resume) if options.resume else options.out
    if directory is None:
        raise EvalError("--resume needs the run directory: --resume DIR, or --out DIR --resume")
    if options.resume and options.out is not None and options.out != directory:
        raise EvalError(f"--resume {directory} and --out {options.out} name two runs: name one")
    if not rundir.is_run_dir(directory):
        raise EvalError(f"--resume continues a run directory, not the single file {directory}")
    stored = rundir.read_config(directory)
    options = dataclasses.replace(options, out=directory)
    if options.subject is None:
        if not rundir.sealed_here(stored):  # its subject, endpoint and key variable are not ours to trust
            raise EvalError(rundir.foreign(directory, stored))
        reach = stored.get("reach") or {}
        given = options
        options = dataclasses.replace(
            options,
            **rundir.options_of(stored),
            env_url=options.env_url or reach.get("env_url"),
            api_key_env=options.api_key_env or reach.get("api_key_env"),
            pass_threshold=stored.get(rundir.THRESHOLD) if options.pass_threshold is None else options.pass_threshold,
        )
        _check_given(given, options, directory)
    return options, stored


def _check_given(given: Options, stored: Options, directory: Path) -> None:
    """`--resume DIR` with no SUBJECT takes the run's settings; one the command line sets to
    something else (a value other than the option's default) is refused rather than ignored."""
    defaults = Options(subject=None)
    for key, name in rundir.DECIDING.items():
        asked = getattr(given, name)
        if asked != getattr(defaults, name) and asked != getattr(stored, name):
            changed = rundir.changed(key, getattr(stored, name), asked)
            raise EvalError(f"--resume {directory}: refused, the run differs: {changed}")


def _config(options: Options, members: list[Member]) -> dict[str, Any]:
    environments = {member.name: str(getattr(member.module, "SNAPSHOT_SHA256", "")) for member in members}
    return rundir.config_of(dataclasses.asdict(options), environments)


def _sink(
    options: Options, config: dict[str, Any], stored: dict[str, Any] | None, jobs: list[Job], secrets: list[str]
) -> Sink:
    """The rows' writer: today's single file (truncated), a new run directory, or a resumed one
    (its kept rows carried, the file appended to, this session's pass threshold recorded)."""
    model = options.model or options.hf_model or ""
    keep = options.upload is not None
    if not rundir.is_run_dir(options.out):
        return Sink(Writer(options.out, model, secrets, keep=keep), [])
    assert options.out is not None
    if stored is None:
        rundir.create(options.out, config)
        return Sink(Writer(options.out / rundir.ROWS, model, secrets, append=True, keep=keep), [])
    rundir.restate(options.out, stored, config)
    rows = rundir.carried(options.out, [job.key for job in jobs])
    return Sink(Writer(options.out / rundir.ROWS, model, secrets, append=True, keep=keep), rows)


def _shows(options: Options) -> bool:
    """Progress on stderr: always on a terminal, elsewhere only with --progress; never when the
    rows go to stdout and the table to stderr (`--out -`)."""
    return str(options.out) != STDOUT and (sys.stderr.isatty() or options.progress)


def _emit_task_filter(path: Path, stats: list[SplitStats], members: list[Member]) -> None:
    sizes = {(member.name, split): size for member in members for split, size in member.splits.items()}
    data = json.dumps(task_filter(stats, sizes), indent=2, sort_keys=True) + "\n"
    write_atomic(path, data.encode())


def _upload(options: Options, target: Target, rows: list[dict[str, Any]]) -> None:
    """Post the rows (as written, secrets masked) to the rollout API; a failure raises
    `UploadFailed` (exit 2) after the rows and the table are out."""
    assert options.upload is not None
    info = run_info(options.model or options.hf_model or "", __version__)
    sampling = {"temperature": options.temperature, "max_tokens": options.max_tokens}
    sent = upload(rows, options.upload, target, info, sampling, timeout=options.upload_timeout)
    click.echo(f"uploaded {len(rows)} rollouts ({sent} events) to {target.url} as run {options.upload!r}", err=True)


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
    if options.hf_model and options.cache is not None:
        raise EvalError("--cache keeps an endpoint's answers: it does not apply to --hf-model")
    if options.hf_model:
        from .hf import LocalModel

        return LocalModel(options.hf_model, max_tokens=options.max_tokens)
    if not (options.base_url and options.model):
        raise EvalError("a model is needed: --base-url URL --model NAME, or --hf-model PATH")
    return ChatEndpoint.from_env(
        options.base_url,
        options.model,
        options.api_key_env or "OPENAI_API_KEY",
        max_tokens=options.max_tokens,
        turn_timeout=options.turn_timeout,
        cache=Cache.open(options.cache) if options.cache is not None else None,
    )
