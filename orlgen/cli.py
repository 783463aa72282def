"""The `orlgen` command: parse arguments, call the project layer, print what it did.

Exit codes: 0 ok; 1 drift found (`check`, `diff`, `snapshot --check`) or a budget that cannot
serve the run (`preflight`); 2 usage or runtime error,
with one line on stderr; 130 interrupted (Ctrl-C). No pipeline logic lives here: every step is a
call into `orlgen.project`.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

import click
from orlgen import __version__
from orlgen.capture.toolsets import TOOLSETS
from orlgen.errors import OrlgenError
from orlgen.lookalike import escaped
from orlgen.runtime.errors import OrlgenRuntimeError, first_line
from orlgen.runtime.hermes import MAX_TOOL_CALLS_PER_TURN
from orlgen.trainers import TRAINER_NAMES, known, trainer_names

if TYPE_CHECKING:
    from orlgen.capture.options import CaptureOptions
    from orlgen.project import Project, Written
    from orlgen.review.diff import Change, Style
    from orlgen.snapshot.model import Snapshot

Tasks = Literal["all", "none"] | int | None


class Failure(click.ClickException):
    """A runtime error: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file: IO[str] | None = None) -> None:
        click.echo(f"orlgen: error: {self.format_message()}", err=True)


@contextmanager
def failures() -> Iterator[None]:
    """Turn the pipeline's errors (one root each for the generator and the runtime, plus the
    file system's) into a one-line message and exit code 2."""
    try:
        yield
    except (OrlgenError, OrlgenRuntimeError) as exc:
        raise Failure(str(exc)) from exc
    except OSError as exc:
        raise Failure(_os_error(exc)) from exc


def _os_error(exc: OSError) -> str:
    """A file-system error as `PATH: what` (`generated/echo.py: Read-only file system`), not
    Python's `[Errno 30] ...` repr-like text."""
    if exc.strerror is None:
        return str(exc)
    paths = [str(path) for path in (exc.filename, exc.filename2) if path is not None]
    return ": ".join([" -> ".join(escaped(path) for path in paths), exc.strerror] if paths else [exc.strerror])


class _Group(click.Group):
    """Ctrl-C exits 130, as shells expect of an interrupted command, instead of click's 1
    (which `check` uses for drift)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("orlgen: interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="orlgen")
def main() -> None:
    """Generate typed, reviewable TRL adapters from Open Reward Standard environments."""


def _env_overrides(items: Sequence[str]) -> dict[str, str] | None:
    """`KEY=VALUE` items → the adapter's `env_overrides`; a key the SDK does not take is refused."""
    from orlgen.runtime.episode import ENV_OVERRIDE_KEYS

    overrides: dict[str, str] = {}
    for item in items:
        key, has_value, value = item.partition("=")
        if not has_value or key not in ENV_OVERRIDE_KEYS:
            raise click.BadParameter(f"expected KEY=VALUE with KEY one of {', '.join(ENV_OVERRIDE_KEYS)}")
        overrides[key] = value
    return overrides or None


def _parse_tasks(_: click.Context, __: click.Parameter, value: str | None) -> Tasks:
    if value is None:
        return None
    if value in ("all", "none"):
        return "all" if value == "all" else "none"
    if value.isascii() and value.isdigit():  # "²" is a digit to str.isdigit, not to int()
        return int(value)
    raise click.BadParameter("expected all, none or a number")


@main.command()
@click.argument("target")
@click.option("--env", help="The environment's key on a server that hosts several.")
@click.option("--name", help="Module name (default: from the catalog name or the environment key).")
@click.option("--split", "splits", multiple=True, help="Capture only this split (repeatable).")
@click.option(
    "--tasks",
    callback=_parse_tasks,
    help="all, none, or N (a sample). Default: all when a split has at most 1000 tasks, else 200.",
)
@click.option(
    "--probes",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Sessions opened per split to find task-only tools (0: none).",
)
@click.option(
    "--reward",
    type=click.Choice(["last", "sum", "mean", "max", "min", "outcome", "summed"]),
    default="last",
    show_default=True,
    help="The env's reward rule, recorded in the snapshot and applied by every trainer's module and "
    "by eval: the last, sum, mean, max or min of the non-null step rewards (outcome and summed: the "
    "names before 0.3 of last and sum).",
)
@click.option(
    "--unfinished-reward",
    type=float,
    help="The reward of a rollout that ran and did not finish (the turn cap reached, no submit). "
    "Default: reduced like any other.",
)
@click.option("--reward-clamp", metavar="LO:HI", help="Bounds of the reward, e.g. 0:1.")
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="A secret for probe sessions (repeatable); without =VALUE, read from the environment "
    "variable NAME. Only the name is recorded.",
)
@click.option(
    "--toolset",
    type=click.Choice(TOOLSETS),
    help="Open the probe sessions with this built-in toolset (the SDK's toolset=); recorded, and the "
    "adapter's sessions open with it.",
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Default: [tool.orlgen] out.")
@click.option("--no-generate", is_flag=True, help="Write the snapshot only.")
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing: compare the live capture with the checked-in snapshot; exit 1 on drift.",
)
def snapshot(
    target: str,
    env: str | None,
    name: str | None,
    splits: tuple[str, ...],
    tasks: Tasks,
    probes: int,
    reward: str,
    unfinished_reward: float | None,
    reward_clamp: str | None,
    secrets: tuple[str, ...],
    toolset: str | None,
    out: Path | None,
    no_generate: bool,
    check_only: bool,
) -> None:
    """Capture TARGET (Owner/Env, a URL, or module:EnvClass) into a snapshot and a module."""
    from orlgen.capture.options import CaptureOptions
    from orlgen.config import parse_secrets
    from orlgen.snapshot.model import Reward

    try:
        rule = Reward.declared(reward, unfinished_reward, reward_clamp)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--reward/--unfinished-reward/--reward-clamp") from None
    with failures():
        project = _project([out] if out else [])
        options = CaptureOptions(
            env=env,
            name=name,
            splits=splits,
            tasks=tasks,
            probes=probes,
            reward=rule,
            secrets=parse_secrets(secrets),
            toolset=toolset,
            note=_warn,
        )
        _capture_one(project, target, options, out or project.out, generate=not no_generate, check_only=check_only)


@main.command()
def sync() -> None:
    """Snapshot and generate every environment listed in [tool.orlgen] envs."""
    with failures():
        project = _project()
        if not project.config.envs:
            raise Failure("pyproject.toml lists no [[tool.orlgen.envs]]")
        for env in project.config.envs:
            _capture_one(project, env.target, env.capture_options(), project.out, generate=True)


def _installed_trainers(names: tuple[str, ...]) -> tuple[str, ...]:
    """`--trainer`'s names: built-in, or a plugin's installed entry point (read only when asked)."""
    unknown = [name for name in names if not known(name)]
    if unknown:
        raise click.BadParameter(f"unknown trainer {unknown[0]!r}: expected one of {', '.join(trainer_names())}")
    return names


_CACHE_HELP = (
    "Keep files already verified with the same bytes and inputs instead of rendering them again "
    "(the cache is kept outside the repository, in $XDG_CACHE_HOME/orlgen; default: on)."
)


@main.command()
@click.argument("snapshots", nargs=-1, type=click.Path(path_type=Path))
@click.option("--cache/--no-cache", default=True, help=_CACHE_HELP)
@click.option(
    "--trainer",
    "trainers",
    multiple=True,
    metavar="NAME",
    callback=lambda _, __, names: _installed_trainers(names),
    help=f"A one-off: render the modules for this trainer ({', '.join(TRAINER_NAMES)} or an installed plugin; "
    "repeatable) instead of [tool.orlgen] trainers; "
    "the configured trainers' modules are left as they are. `check` owns only the configured ones.",
)
def generate(snapshots: tuple[Path, ...], cache: bool, trainers: tuple[str, ...]) -> None:
    """Re-render modules from SNAPSHOTS (default: every snapshot in the output directory), offline.

    In a directory, generated modules whose snapshot is gone are removed."""
    with failures():
        project = _project(snapshots)
        _report(project.write(project.generation(snapshots, cache=cache, trainers=trainers)))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--cache/--no-cache", default=True, help=_CACHE_HELP)
def check(paths: tuple[Path, ...], cache: bool) -> None:
    """Exit 1 if a generated file is missing, stale, hand-edited or orphaned, or a snapshot is invalid."""
    from orlgen.review.check import summary

    with failures():
        drift = _project(paths).check(paths, cache=cache)
    for problem in drift:
        click.echo(f"{escaped(str(problem.path))}: {problem.cause}")
        if problem.expected is not None or problem.actual is not None:
            sys.stdout.writelines(_diff(problem.path, problem.actual, problem.expected))
    if drift:
        click.echo(summary(drift), err=True)
        raise SystemExit(1)
    click.echo("generated files are current")


@main.command()
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--against", "new", required=True, help="A snapshot file, or a live target to capture.")
@click.option(
    "--format", "style", type=click.Choice(["text", "json", "github", "markdown"]), default="text", show_default=True
)
def diff(old: Path, new: str, style: Style) -> None:
    """Classify every change from OLD to NEW; exit 1 if any change is breaking.

    Which rules are breaking or not reported is the project's `[tool.orlgen.diff]`."""
    from orlgen.review.diff import render

    with failures():
        found = _project([old]).diff(old, new, _progress)
    if found.note:
        click.echo(f"orlgen: note: {found.note}", err=True)
    changes = found.changes
    sys.stdout.write(render(changes, style))
    if style == "text":
        breaking = sum(change.breaking for change in changes)
        click.echo(f"{len(changes)} change(s), {breaking} breaking", err=True)
    if any(change.breaking for change in changes):
        raise SystemExit(1)


@main.command()
@click.argument("snapshots", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--tokenizer",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A local tokenizer directory: the tool block's size in its tokens too.",
)
def vet(snapshots: tuple[Path, ...], tokenizer: Path | None) -> None:
    """Lint the tools the model reads (default: every snapshot in `out`): one line per finding
    with its rule; exit 1 on a finding the project's `[tool.orlgen.vet]` marks an error."""
    with failures():
        count = None if tokenizer is None else _token_counter(tokenizer)
        findings = _project(snapshots).vet(snapshots, count)
    for finding in findings:
        click.echo(finding.line())
    errors = sum(finding.severity == "error" for finding in findings)
    warnings = sum(finding.severity == "warning" for finding in findings)
    click.echo(f"{errors} error(s), {warnings} warning(s)", err=True)
    if errors:
        raise SystemExit(1)


def _token_counter(path: Path) -> Callable[[str], int]:
    """Tokens of a text by the tokenizer saved in `path` (read locally, never downloaded)."""
    from orlgen.project import UsageError

    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UsageError("--tokenizer needs transformers: pip install 'orlgen[train]'") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a tokenizer directory ({first_line(str(exc))})") from None
    return lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])


@main.command(name="init")
@click.option("--out", default="generated", show_default=True, help="Where snapshots and modules will live.")
def init_(out: str) -> None:
    """Set this repository up for review: [tool.orlgen], a pre-commit hook running `orlgen check`,
    and .gitattributes collapsing stored tasks in GitHub diffs. Adds; never rewrites a line."""
    from orlgen.init import init

    with failures():
        steps = init(Path("."), out)
    for step in steps:
        click.echo(step.line(), err=step.outcome == "skipped")


@main.command(name="eval")
@click.argument("subject", required=False)
@click.option("--base-url", help="An OpenAI-compatible endpoint (e.g. http://localhost:8000/v1).")
@click.option("--model", help="The model name the endpoint serves.")
@click.option("--api-key-env", help="Env var holding the endpoint's key (default: OPENAI_API_KEY).")
@click.option("--hf-model", type=click.Path(), help="A local transformers checkpoint, generated in-process.")
@click.option("--split", "splits", multiple=True, help="Split to evaluate (repeatable; default: test, else train).")
@click.option("-n", "num_tasks", type=click.IntRange(min=1), help="Tasks per split: the first N (default: all).")
@click.option("-k", "k", type=click.IntRange(min=1), default=1, show_default=True, help="Samples per task.")
@click.option("--max-turns", type=click.IntRange(min=1), default=10, show_default=True, help="Model turns per rollout.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=512, show_default=True, help="Tokens per model turn.")
@click.option("--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Rollouts at once.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--temperature", type=click.FloatRange(min=0), default=1.0, show_default=True)
@click.option("--env", help="For a mixture: evaluate only this environment.")
@click.option("--env-url", help="The environment's server (default: the module's own address).")
@click.option(
    "--env-override",
    "env_overrides",
    multiple=True,
    metavar="KEY=VALUE",
    callback=lambda ctx, param, items: _env_overrides(items),
    help="A value the env's own code reads, sent with each session as the SDK's env_overrides (repeatable; "
    "keys OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY): point an env's judge at "
    "your endpoint. Written nowhere.",
)
@click.option(
    "--pass-threshold", type=float, help="Reward a rollout must reach to pass (default: 1.0, or the max seen)."
)
@click.option("--format", "style", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--out",
    type=click.Path(allow_dash=True, path_type=Path),
    help="A run directory (config.json, rollouts.jsonl, report.html), or one FILE.jsonl of rows (`-`: stdout).",
)
@click.option(
    "--turn-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds one model turn may take in all (retries included).",
)
@click.option(
    "--max-tool-calls",
    type=click.IntRange(min=1),
    default=MAX_TOOL_CALLS_PER_TURN,
    show_default=True,
    help="Tool calls run per model turn; the rest count as failed calls.",
)
# A run kept and continued: resume, per task, cache, progress (docs/eval.md).
@click.option(
    "--resume",
    is_flag=False,
    flag_value="",
    metavar="[DIR]",
    help="Continue the run in DIR (or in --out's directory): play only the rollouts it lacks.",
)
@click.option("--by-task", is_flag=True, help="Add a line per task to the table: mean, passes of k, equal rewards.")
@click.option(
    "--emit-task-filter",
    type=click.Path(path_type=Path),
    metavar="FILE",
    help="Write the tasks whose rollouts all scored the same, for build_dataset(indices=...).",
)
@click.option(
    "--cache", type=click.Path(path_type=Path), metavar="DIR", help="Keep the model's answers in DIR and reuse them."
)
@click.option("--progress", is_flag=True, help="A progress line on stderr even when it is not a terminal.")
@click.option("--upload", metavar="RUN_NAME", help="Post the rollouts to OpenReward's rollout API as this run.")
@click.option(
    "--upload-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds one upload request may take.",
)
def eval_(subject: str | None, **options: object) -> None:
    """Score a model on the environments of SUBJECT (a generated module, its dotted name, or a
    snapshot), through the generated adapter, as training plays them. `--resume DIR` alone
    continues a run with the settings it was started with."""
    from orlgen.eval.command import Options, run

    with failures():
        code = run(Options(subject=subject, **options))  # type: ignore[arg-type]
    if code:
        raise SystemExit(code)


@main.command()
@click.option(
    "--loop",
    type=click.Choice(["sync", "async"]),
    default="sync",
    show_default=True,
    help="TRL's rollout loop: GRPOTrainer's (sync) or AsyncGRPOTrainer's (async).",
)
# 0.2.0's name for --loop (grpo meant sync); kept for a release, hidden from --help.
@click.option("--trainer", "old_loop", type=click.Choice(["grpo", "async"]), default=None, hidden=True)
@click.option(
    "--world-size", type=int, default=1, show_default=True, help="Processes (torchrun --nproc_per_node x nodes)."
)
@click.option("--per-device-batch", type=int, required=True, help="per_device_train_batch_size.")
@click.option("--num-generations", type=int, required=True, help="num_generations.")
@click.option(
    "--steps-per-generation", type=int, default=1, show_default=True, help="GRPOTrainer's steps_per_generation."
)
@click.option("--gradient-accumulation", type=int, default=1, show_default=True, help="gradient_accumulation_steps.")
@click.option("--prefetch", type=int, default=0, show_default=True, help="The adapter's prefetch= (GRPOTrainer).")
@click.option(
    "--max-inflight", type=int, default=None, help="AsyncGRPOTrainer's max_inflight_tasks (default: TRL's auto)."
)
@click.option("--max-sessions", type=int, default=None, help="The session budget (default: $ORLGEN_MAX_SESSIONS).")
def preflight(loop: Literal["sync", "async"], old_loop: str | None, max_sessions: int | None, **settings: int) -> None:
    """Print the peak sessions each process and the run will hold open against the env;
    exit 1 when the session budget cannot serve the run."""
    from orlgen.preflight import plan, render
    from orlgen.runtime.session.budget import run_limit

    if old_loop is not None:
        loop = "async" if old_loop == "async" else "sync"
        _warn(f"--trainer {old_loop} is now --loop {loop} (--trainer goes in a later release)")
    with failures():
        limit = max_sessions if max_sessions is not None else run_limit()
        result = plan(loop, max_sessions=limit, **settings)
    sys.stdout.write(render(result))
    if result.problem:
        raise SystemExit(1)


def _project(paths: Sequence[Path] = ()) -> Project:
    from orlgen.project import Project

    return Project.find(list(paths))


def _capture_one(
    project: Project, target: str, options: CaptureOptions, out: Path, *, generate: bool, check_only: bool = False
) -> None:
    from orlgen.capture.live import summary
    from orlgen.snapshot.model import tasks_path

    if check_only:
        live = project.live_check(target, out, options, progress=_progress)
        _print_live_changes(live.path, live.changes, _new_deployment(live.before, live.live))
        return
    captured = project.capture(target, options, progress=_progress, out=out)
    path, written = project.save(captured, out, generate)
    click.echo(f"{'wrote' if path in written.written else 'unchanged'} {path} ({summary(captured)})")
    # one line per capture (its two files) when nothing else changed
    _report(written, skip=(path, tasks_path(path)), unchanged=False)


def _print_live_changes(path: Path, changes: list[Change], deployment: str | None) -> None:
    """`snapshot --check`: exit 1 with the classified changes when the live env drifted; a
    new deployment with the same schema is a note (exit 0)."""
    from orlgen.review.diff import render
    from orlgen.snapshot.model import load
    from orlgen.snapshot.recorded import command

    if deployment:
        click.echo(f"{path}: same schema, new deployment ({deployment})" if not changes else f"{path}: {deployment}")
    if not changes:
        if not deployment:
            click.echo(f"{path}: the live environment matches the snapshot")
        return
    sys.stdout.write(render(changes, "text"))
    again = command(load(path))
    click.echo(f"{path}: the live environment drifted ({len(changes)} change(s)): re-capture with `{again}`", err=True)
    raise SystemExit(1)


def _new_deployment(recorded: Snapshot, live: Snapshot) -> str | None:
    """How the live deployment differs from the one the checked-in snapshot recorded, if it does."""
    from orlgen.runtime.ors.provenance import changed

    if recorded.deployment is None:
        return None
    now = live.deployment.model_dump(exclude_none=True) if live.deployment else {}
    return changed(recorded.deployment.model_dump(exclude_none=True), now)


def _warn(text: str) -> None:
    click.echo(f"orlgen: warning: {escaped(text)}", err=True)


def _report(written: Written, skip: Sequence[Path] = (), unchanged: bool = True) -> None:
    for found in [*written.dropped, *written.warnings]:  # nothing dropped, renamed or left goes unsaid
        click.echo(f"orlgen: warning: {found}", err=True)
    for path in sorted(written.written + (written.unchanged if unchanged else [])):
        if path not in skip:
            click.echo(f"{'wrote' if path in written.written else 'unchanged'} {path}")
    for path in written.removed:
        click.echo(f"removed {path} (its snapshot is gone)")


def _diff(path: Path, actual: bytes | None, expected: bytes | None) -> Iterator[str]:
    def lines(data: bytes | None) -> list[str]:
        # what a pull request wrote, shown as it is: invisible characters as escapes
        return [] if data is None else escaped(data.decode(errors="replace"), keep="\n").splitlines(keepends=True)

    yield from difflib.unified_diff(lines(actual), lines(expected), f"{path} (on disk)", f"{path} (generated)")


@contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """One status line on stderr while a capture waits on its server (discovery, probe sessions,
    tasks), rewritten in place and cleared at the end; only on a terminal, so that logs and
    pipes get the command's output alone."""
    if not sys.stderr.isatty():
        yield lambda n: None
        return
    done = 0

    def show() -> None:
        count = f" {done}/{total}" if total else "..."
        sys.stderr.write(f"\r\x1b[Korlgen: capturing: {escaped(label)}{count}")
        sys.stderr.flush()

    def advance(n: int) -> None:
        nonlocal done
        done += n
        show()

    show()
    try:
        yield advance
    finally:
        sys.stderr.write("\r\x1b[K")
        sys.stderr.flush()
