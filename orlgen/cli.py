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
from .files import write_atomic, write_files

DEFAULT_OUT = Path("generated")


class Failure(click.ClickException):
    """A runtime error: one line on stderr, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"orlgen: error: {self.format_message()}", err=True)


@contextmanager
def failures() -> Iterator[None]:
    """Turn the pipeline's own errors into a one-line message and exit code 2."""
    from .capture import CaptureError
    from .render import RenderError
    from .runtime.connection import ConfigError
    from .schema import SchemaError
    from .snapshot import SnapshotError

    try:
        yield
    except (CaptureError, RenderError, SchemaError, SnapshotError, ConfigError, OSError) as exc:
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
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True)
@click.option("--no-generate", is_flag=True, help="Write the snapshot only.")
def snapshot(target: str, env: str | None, name: str | None, splits: tuple[str, ...], tasks: Any,
             probes: int, out: Path, no_generate: bool) -> None:
    """Capture TARGET (Owner/Env, a URL, or module:EnvClass) into a snapshot and a module."""
    from .capture import CaptureOptions, capture

    with failures():
        options = CaptureOptions(env=env, name=name, splits=splits, tasks=tasks, probes=probes)
        captured = capture(target, options, progress=_progress)
        path = out / captured.file_name
        write_atomic(path, captured.to_json().encode())
        click.echo(f"wrote {path} ({len(captured.tools)} tools, {sum(s.num_tasks for s in captured.splits)} tasks)")
        if not no_generate:
            _write_generated([path])


@main.command()
@click.argument("snapshots", nargs=-1, type=click.Path(path_type=Path))
def generate(snapshots: tuple[Path, ...]) -> None:
    """Re-render modules from SNAPSHOTS (default: every snapshot in generated/), offline."""
    with failures():
        _write_generated(_snapshot_paths(snapshots or (DEFAULT_OUT,)))


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Exit 1 if a generated module is missing, stale, hand-edited or orphaned."""
    from .check import find_drift

    with failures():
        drift = find_drift(paths or (DEFAULT_OUT,))
    for problem in drift:
        click.echo(f"{problem.path}: {problem.cause}")
        if problem.expected is not None or problem.actual is not None:
            sys.stdout.writelines(_diff(problem.path, problem.actual, problem.expected))
    if drift:
        click.echo(f"{len(drift)} generated file(s) out of date: run `orlgen generate`", err=True)
        raise SystemExit(1)
    click.echo("generated files are current")


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


def _write_generated(snapshot_paths: list[Path]) -> None:
    from .render import generate as render
    from .snapshot import load

    files = render((path, load(path)) for path in snapshot_paths)
    written = set(write_files(files))
    for path in sorted(files):
        click.echo(f"{'wrote' if path in written else 'unchanged'} {path}")


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
