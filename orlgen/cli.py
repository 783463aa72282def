"""The `orlgen` command: parse arguments, run the pipeline, map failures to exit codes.

Exit codes: 0 ok; 1 drift found (`check`); 2 usage or runtime error, with one line on stderr.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from . import __version__
from .files import write_files


class Failure(click.ClickException):
    """A runtime error: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"orlgen: error: {self.format_message()}", err=True)


@contextmanager
def failures() -> Iterator[None]:
    """Turn the pipeline's own errors into a one-line message and exit code 2."""
    from .capture import CaptureError
    from .config import ConfigFileError
    from .render import RenderError
    from .runtime.connection import ConfigError
    from .schema import SchemaError
    from .snapshot import SnapshotError

    try:
        yield
    except (CaptureError, ConfigFileError, RenderError, SchemaError, SnapshotError, ConfigError, OSError) as exc:
        raise Failure(str(exc)) from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="orlgen")
def main() -> None:
    """Generate typed, reviewable TRL adapters from Open Reward Standard environments."""


def _parse_tasks(_: Any, __: Any, value: str | None) -> Any:
    if value is None or value in ("all", "none"):
        return value
    if value.isdigit():
        return int(value)
    raise click.BadParameter("expected all, none or a number")


@main.command()
@click.argument("target")
@click.option("--env", help="The environment's key on a server that hosts several.")
@click.option("--name", help="Module name (default: from the catalog name or the environment key).")
@click.option("--split", "splits", multiple=True, help="Capture only this split (repeatable).")
@click.option("--tasks", callback=_parse_tasks,
              help="all, none, or N (a sample). Default: all when a split has at most 1000 tasks, else 200.")
@click.option("--probes", default=3, show_default=True, help="Sessions opened per split to find task-only tools.")
@click.option("--secret", "secrets", multiple=True, metavar="NAME[=VALUE]",
              help="A secret for probe sessions (repeatable); without =VALUE, read from the environment "
                   "variable NAME. Only the name is recorded.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Default: [tool.orlgen] out.")
@click.option("--no-generate", is_flag=True, help="Write the snapshot only.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing: compare the live capture with the checked-in snapshot; exit 1 on drift.")
def snapshot(target: str, env: str | None, name: str | None, splits: tuple[str, ...], tasks: Any,
             probes: int, secrets: tuple[str, ...], out: Path | None, no_generate: bool, check_only: bool) -> None:
    """Capture TARGET (Owner/Env, a URL, or module:EnvClass) into a snapshot and a module."""
    from .capture import CaptureOptions
    from .config import parse_secrets

    with failures():
        config = _config()
        options = CaptureOptions(env=env, name=name, splits=splits, tasks=tasks, probes=probes,
                                 secrets=parse_secrets(secrets))
        _capture_one(target, options, out or config.out, config, generate=not no_generate,
                     check_only=check_only)


@main.command()
def sync() -> None:
    """Snapshot and generate every environment listed in [tool.orlgen] envs."""
    with failures():
        config = _config()
        if not config.envs:
            raise Failure("pyproject.toml lists no [[tool.orlgen.envs]]")
        for env in config.envs:
            _capture_one(env.target, env.capture_options(), config.out, config, generate=True)


@main.command()
@click.argument("snapshots", nargs=-1, type=click.Path(path_type=Path))
def generate(snapshots: tuple[Path, ...]) -> None:
    """Re-render modules from SNAPSHOTS (default: every snapshot in the output directory), offline.

    In a directory, generated modules whose snapshot is gone are removed."""
    with failures():
        config = _config()
        paths = snapshots or (config.out,)
        _write_generated(_snapshot_paths(paths), config, prune=[p for p in paths if p.is_dir()])


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--full", is_flag=True, help="Re-render every file, even those whose header records current inputs.")
def check(paths: tuple[Path, ...], full: bool) -> None:
    """Exit 1 if a generated module is missing, stale, hand-edited or orphaned."""
    from .check import find_drift
    from .config import mixture_members

    with failures():
        config = _config()
        drift = find_drift(paths or (config.out,), config.templates, mixture_members(config), full=full)
    for problem in drift:
        click.echo(f"{problem.path}: {problem.cause}")
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
def diff(old: Path, new: str, style: str) -> None:
    """Classify every change from OLD to NEW; exit 1 if any change is breaking."""
    from .diff import diff as classify
    from .diff import render
    from .snapshot import load

    with failures():
        before = load(old)
        after = load(Path(new)) if new.endswith(".snapshot.json") else _live(new, before)
        changes = classify(before, after)
    sys.stdout.write(render(changes, style))
    if style == "text":
        breaking = sum(change.breaking for change in changes)
        click.echo(f"{len(changes)} change(s), {breaking} breaking", err=True)
    if any(change.breaking for change in changes):
        raise SystemExit(1)


def _config() -> Any:
    from .config import load_config

    return load_config()


def _live(target: str, like: Any) -> Any:
    """Capture `target` the way `like` was captured, reading only what a comparison needs."""
    from .capture import CaptureOptions, capture

    splits = tuple(split.name for split in like.splits)
    env = like.target.env if "://" in target else None
    options = CaptureOptions(env=env, name=like.name, splits=splits, tasks="none")
    return capture(target, options, progress=_progress)


def _capture_one(target: str, options: Any, out: Path, config: Any, *, generate: bool,
                 check_only: bool = False) -> None:
    from .capture import capture, summary

    captured = capture(target, options, progress=_progress)
    path = out / captured.file_name
    if check_only:
        _check_live(path, captured)
        return
    written = write_files({path: captured.to_json().encode()})
    click.echo(f"{'wrote' if written else 'unchanged'} {path} ({summary(captured)})")
    if generate:  # the whole directory: a mixture of this env is rendered from its snapshot too
        _write_generated(_snapshot_paths((out,)), config)


def _check_live(path: Path, captured: Any) -> None:
    """`snapshot --check`: exit 1 with the classified changes when the live env drifted."""
    from .diff import diff as classify
    from .diff import render
    from .snapshot import load

    if not path.exists():
        raise Failure(f"{path}: no checked-in snapshot to compare with")
    checked_in = load(path)
    changes = classify(checked_in, captured)
    if not changes:
        click.echo(f"{path}: the live environment matches the snapshot")
        return
    sys.stdout.write(render(changes, "text"))
    click.echo(f"{path}: the live environment drifted ({len(changes)} change(s)): run `orlgen snapshot`", err=True)
    raise SystemExit(1)


def _snapshot_paths(paths: tuple[Path, ...]) -> list[Path]:
    from .render import find_snapshots

    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += find_snapshots(path)
        elif path.exists():
            found.append(path)
        else:
            raise Failure(f"{path}: no such file or directory")
    return found


def _write_generated(snapshot_paths: list[Path], config: Any, prune: list[Path] = ()) -> None:
    from .check import orphans
    from .config import mixture_members
    from .render import generate as render
    from .snapshot import load

    files = render(((path, load(path)) for path in snapshot_paths), config.templates, mixture_members(config))
    written = set(write_files(files))
    for path in sorted(files):
        click.echo(f"{'wrote' if path in written else 'unchanged'} {path}")
    for path in orphans(prune, files):
        path.unlink()
        click.echo(f"removed {path} (its snapshot is gone)")


def _diff(path: Path, actual: bytes | None, expected: bytes | None) -> Iterator[str]:
    def lines(data: bytes | None) -> list[str]:
        return [] if data is None else data.decode(errors="replace").splitlines(keepends=True)

    yield from difflib.unified_diff(lines(actual), lines(expected), f"{path} (on disk)", f"{path} (generated)")


@contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr, for captures large enough to wait for."""
    if total < 1000:
        yield lambda n: None
        return
    with click.progressbar(length=total, label=f"capturing {label}", file=sys.stderr) as bar:
        yield bar.update
