"""The `orlgen` command: parse arguments, call the project layer, print what it did.

Exit codes: 0 ok; 1 drift found (`check`, `diff`, `snapshot --check`); 2 usage or runtime error,
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

from . import __version__
from .errors import OrlgenError
from .lookalike import escaped
from .runtime.errors import OrlgenRuntimeError

if TYPE_CHECKING:
    from .capture import CaptureOptions
    from .diff import Change
    from .project import Project, Written

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
    except (OrlgenError, OrlgenRuntimeError, OSError) as exc:
        raise Failure(str(exc)) from exc


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
@click.option("--probes", default=3, show_default=True, help="Sessions opened per split to find task-only tools.")
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    metavar="NAME[=VALUE]",
    help="A secret for probe sessions (repeatable); without =VALUE, read from the environment "
    "variable NAME. Only the name is recorded.",
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
    secrets: tuple[str, ...],
    out: Path | None,
    no_generate: bool,
    check_only: bool,
) -> None:
    """Capture TARGET (Owner/Env, a URL, or module:EnvClass) into a snapshot and a module."""
    from .capture import CaptureOptions
    from .config import parse_secrets

    with failures():
        project = _project([out] if out else [])
        options = CaptureOptions(
            env=env, name=name, splits=splits, tasks=tasks, probes=probes, secrets=parse_secrets(secrets)
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


@main.command()
@click.argument("snapshots", nargs=-1, type=click.Path(path_type=Path))
def generate(snapshots: tuple[Path, ...]) -> None:
    """Re-render modules from SNAPSHOTS (default: every snapshot in the output directory), offline.

    In a directory, generated modules whose snapshot is gone are removed."""
    with failures():
        project = _project(snapshots)
        _report(project.write(project.generation(snapshots)))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--cache",
    is_flag=True,
    help="Skip re-rendering files already verified with the same bytes and inputs "
    "(cache kept outside the repository, in $XDG_CACHE_HOME/orlgen).",
)
def check(paths: tuple[Path, ...], cache: bool) -> None:
    """Exit 1 if a generated file is missing, stale, hand-edited or orphaned, or a snapshot is invalid."""
    with failures():
        drift = _project(paths).check(paths, cache=cache)
    for problem in drift:
        click.echo(f"{escaped(str(problem.path))}: {problem.cause}")
        if problem.expected is not None or problem.actual is not None:
            sys.stdout.writelines(_diff(problem.path, problem.actual, problem.expected))
    if drift:
        click.echo(f"{len(drift)} generated file(s) out of date: run `orlgen generate`", err=True)
        raise SystemExit(1)
    click.echo("generated files are current")


@main.command()
@click.argument("old", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--against", "new", required=True, help="A snapshot file, or a live target to capture.")
@click.option("--format", "style", type=click.Choice(["text", "json", "github"]), default="text", show_default=True)
def diff(old: Path, new: str, style: Literal["text", "json", "github"]) -> None:
    """Classify every change from OLD to NEW; exit 1 if any change is breaking."""
    from .diff import render

    with failures():
        changes = _project([old]).diff(old, new, _progress)
    sys.stdout.write(render(changes, style))
    if style == "text":
        breaking = sum(change.breaking for change in changes)
        click.echo(f"{len(changes)} change(s), {breaking} breaking", err=True)
    if any(change.breaking for change in changes):
        raise SystemExit(1)


def _project(paths: Sequence[Path] = ()) -> Project:
    from .project import Project

    return Project.find(list(paths))


def _capture_one(
    project: Project, target: str, options: CaptureOptions, out: Path, *, generate: bool, check_only: bool = False
) -> None:
    from .capture import summary

    captured = project.capture(target, options, progress=_progress)
    if check_only:
        _print_live_changes(*project.live_changes(out, captured))
        return
    path, written = project.save(captured, out, generate)
    click.echo(f"{'wrote' if path in written.written else 'unchanged'} {path} ({summary(captured)})")
    _report(written, skip=path)


def _print_live_changes(path: Path, changes: list[Change]) -> None:
    """`snapshot --check`: exit 1 with the classified changes when the live env drifted."""
    from .diff import render

    if not changes:
        click.echo(f"{path}: the live environment matches the snapshot")
        return
    sys.stdout.write(render(changes, "text"))
    click.echo(f"{path}: the live environment drifted ({len(changes)} change(s)): run `orlgen snapshot`", err=True)
    raise SystemExit(1)


def _report(written: Written, skip: Path | None = None) -> None:
    for found in [*written.dropped, *written.warnings]:  # nothing dropped, renamed or left goes unsaid
        click.echo(f"orlgen: warning: {found}", err=True)
    for path in sorted(written.written + written.unchanged):
        if path != skip:
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
    """A progress bar on stderr, for captures large enough to wait for."""
    if total < 1000:
        yield lambda n: None
        return
    with click.progressbar(length=total, label=f"capturing {label}", file=sys.stderr) as bar:
        yield bar.update
