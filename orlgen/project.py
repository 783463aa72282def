"""The project layer: what each `orlgen` command does, as typed calls the CLI only prints.

A project is a directory with a `pyproject.toml` (its `[tool.orlgen]` table: output directory,
template overrides, envs, mixtures). Commands name paths; the project is found from them — the
nearest `pyproject.toml` above the first path, else the working directory's — so `orlgen
generate DIR` from anywhere reads DIR's own config and never mistakes one of DIR's mixture
modules for an orphan.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

from orlgen.capture import recapture
from orlgen.capture.options import CaptureOptions
from orlgen.capture.shadowing import shadow_warning
from orlgen.capture.targets import server_url
from orlgen.config import Config, EnvConfig, find_config, mixture_members, mixture_weights
from orlgen.disk import FileMap
from orlgen.errors import CaptureError, OrlgenError, RefusedWrite
from orlgen.names import check_name
from orlgen.plan.planner import dropped_keywords, lookalike_warnings
from orlgen.render import jobs as render
from orlgen.render import lock
from orlgen.render.deadline import render_deadline
from orlgen.render.jobs import module_path
from orlgen.render.verify import Verifier
from orlgen.review import incremental, layout, shadows, targets
from orlgen.review.cache import Verdicts
from orlgen.review.check import FOREIGN, MIXTURE, NOT_REGULAR, RECAPTURE, TRUST, Drift, compare
from orlgen.review.diff import Change, diff
from orlgen.review.files import is_regular, remove_files, write_files
from orlgen.review.identity import existing_module, same_env, settle_name
from orlgen.review.vet import Finding, vet
from orlgen.runtime.redaction import redact
from orlgen.schema import Dropped, printable
from orlgen.snapshot.model import (
    SUFFIX,
    Snapshot,
    SnapshotError,
    Target,
    load,
    recorded_target,
    tasks_path,
    tasks_text,
)
from orlgen.trainers import TRAINER_NAMES, module_suffix, plugin_digest, trainer, trainer_names

# `progress(label, total)` → a context whose value advances a progress display by n tasks.
Progress = Callable[[str, int], AbstractContextManager[Callable[[int], None]]]


class UsageError(OrlgenError):
    """A command was given a path or option it cannot use."""


@dataclass(frozen=True)
class Generation:
    """What `generate` would do: the files to write, the orphaned modules to remove, and the
    schema keywords the sanitiser dropped on the way (reported, never silent)."""

    files: FileMap
    orphans: list[Path] = field(default_factory=list)
    dropped: tuple[Dropped, ...] = ()
    warnings: tuple[str, ...] = ()  # directory problems a capture leaves for later (a partial mixture)


@dataclass(frozen=True)
class Written:
    written: list[Path]
    unchanged: list[Path]
    removed: list[Path]
    dropped: tuple[Dropped, ...] = ()  # the generation's sanitiser report, for the CLI to print
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class LiveCheck:
    """`snapshot --check`'s findings: the checked-in snapshot, the live capture made the same
    way, and the schema changes between them."""

    path: Path
    before: Snapshot
    live: Snapshot
    changes: list[Change]


@dataclass(frozen=True)
class Project:
    config: Config
    root: Path = Path(".")  # the directory of its pyproject.toml

    @classmethod
    def find(cls, paths: Sequence[Path] = ()) -> Project:
        """The project the first of `paths` belongs to, else the working directory's."""
        root, config = find_config(paths[0] if paths else None)
        return cls(config, root)

    @property
    def out(self) -> Path:
        return self.config.out

    def mixtures(self) -> dict[str, tuple[str, ...]]:
        return mixture_members(self.config)

    def weights(self) -> dict[str, dict[str, float]]:
        """Each mixture's sampling weights by member, where its config gives some."""
        return mixture_weights(self.config)

    # ---------------------------------------------------------------------------------------
    # offline: generate and check
    # ---------------------------------------------------------------------------------------

    def snapshot_paths(self, paths: Sequence[Path]) -> list[Path]:
        """Snapshot files named by `paths`: a directory stands for every snapshot in it."""
        found: list[Path] = []
        for path in paths:
            if path.is_dir():
                found += snapshots_in(path)
            elif path.name.endswith(SUFFIX) and path.is_file():
                found.append(path)
            elif path.exists():
                raise UsageError(f"{path}: not a directory or a {SUFFIX} file")
            else:
                raise UsageError(f"{path}: no such file or directory")
        return found

    def generation(self, paths: Sequence[Path] = (), cache: bool = True, trainers: Sequence[str] = ()) -> Generation:
        """Render every file of the snapshots under `paths` (default: the output directory):
        their modules, and the snapshots themselves in canonical form. In a directory, generated
        modules that no snapshot renders any more are orphans; anything the directory plan
        calls a problem (`orlgen.review.layout`) is refused before anything is rendered. With `cache`,
        a file the speed cache holds current is neither rendered nor verified again.

        `trainers` (`generate --trainer`, a one-off) renders every snapshot's modules for those
        trainers instead of the configured ones; the configured trainers' modules are kept as
        they are, neither rendered nor removed."""
        paths = list(paths) or [self.out]
        snapshots = {path: load(_regular(path), rows=False) for path in self.snapshot_paths(paths)}
        jobs = self._jobs(snapshots, trainers)  # refuses a name that would write elsewhere, first
        kept = [job.path for job in self._jobs(snapshots)] if trainers else []
        found = self._layout(paths, snapshots, [*(job.path for job in jobs), *kept])
        _refuse(found.partial + found.problems)
        files = self._rendered("generate", jobs, snapshots, self._verdicts(cache))
        return Generation(files, list(found.orphans), _dropped(snapshots), _renamed(snapshots))

    def _verdicts(self, cache: bool) -> Verdicts | None:
        return Verdicts.for_project(self.root, self.config.templates) if cache else None

    def _rendered(
        self, command: str, jobs: Sequence[render.Job], snapshots: dict[Path, Snapshot], verdicts: Verdicts | None
    ) -> FileMap:
        """Every job's bytes: kept when the cache holds the file current, else rendered and the
        snapshots' own modules verified (the verifier's child starts only when one was rendered,
        and warms up while the parent renders the rest)."""
        modules = {render.module_path(path, snapshot): snapshot for path, snapshot in snapshots.items()}
        kept, stale = incremental.split(jobs, verdicts)
        with Verifier() as verifier, render_deadline(command):
            if any(job.path in modules for job in stale):
                verifier.start()
            rendered = {job.path: job.render().encode() for job in stale}
            shared = {job.path: (kept | rendered)[job.path].decode() for job in jobs if job.inputs[1] == "models"}
            checked = [(path, rendered[path].decode(), modules[path]) for path in modules if path in rendered]
            verifier.check(checked, beside=shared)
        incremental.remember(jobs, rendered, verdicts)
        return kept | rendered

    def _layout(
        self, paths: Sequence[Path], snapshots: dict[Path, Snapshot], owned: Iterable[Path], broken: Sequence[Path] = ()
    ) -> layout.Layout:
        """The plan of the directories among `paths`, read by `snapshot`, `generate` and `check`
        alike. A snapshot file that cannot be read (`broken`, reported itself) still names its
        module and its mixtures: they are neither orphans nor missing a member."""
        named = {path: snapshot.name for path, snapshot in snapshots.items()}
        named |= {path: path.name.removesuffix(SUFFIX) for path in broken}
        keep = [module for path in broken for module in self._modules_of(path)]
        directories = [path for path in paths if path.is_dir()]
        return layout.plan(directories, named, owned, self.mixtures(), self.out, keep)

    def _jobs(self, snapshots: dict[Path, Snapshot], trainers: Sequence[str] = ()) -> list[render.Job]:
        """Every file orlgen owns for these snapshots: each snapshot in canonical form (a file
        with the right hash but other bytes — key order, escapes, spacing — is rewritten, so a
        reviewer reads exactly what orlgen reads) and every module they render, for their
        configured trainers (or for `trainers`, when given)."""
        canonical = [
            render.Job(path, ("snapshot", snapshot.sha256), snapshot.interface_text)
            for path, snapshot in snapshots.items()
        ]
        chosen = {s.name: tuple(trainers) for s in snapshots.values()} if trainers else self.trainers(snapshots)
        modules = render.jobs(snapshots.items(), self.config.templates, self.mixtures(), chosen, self.weights())
        return canonical + _tasks_jobs(snapshots) + modules + self._lock_jobs(snapshots)

    def _lock_jobs(self, snapshots: Mapping[Path, Snapshot]) -> list[render.Job]:
        """The `orlgen.lock` of each directory the snapshots are in (`orlgen.render.lock`): the
        installed versions of the generator and of the trainer plugins the config lists (not of
        a one-off `--trainer`, whose files `check` does not own)."""
        plugins = sorted({name for name in self._configured_trainers() if name not in TRAINER_NAMES})
        inputs = ("lock", lock.NAME, *(plugin_digest(name) for name in plugins))
        return [
            render.Job(directory / lock.NAME, inputs, functools.partial(lock.written, plugins))
            for directory in sorted({path.parent for path in snapshots})
        ]

    def _configured_trainers(self) -> set[str]:
        return {*self.config.trainers, *(name for env in self.config.envs for name in env.trainers or ())}

    def trainers(self, snapshots: Mapping[Path, Snapshot]) -> dict[str, tuple[str, ...]]:
        """Each snapshot's trainers, by module name: those of its `[[tool.orlgen.envs]]` entry,
        else `[tool.orlgen] trainers`."""
        return {snapshot.name: self._trainers_of(snapshot) for snapshot in snapshots.values()}

    def _trainers_of(self, snapshot: Snapshot) -> tuple[str, ...]:
        entry = next((env for env in self.config.envs if _is_entry_of(env, snapshot)), None)
        return self.config.trainers if entry is None or entry.trainers is None else entry.trainers

    def write(self, generation: Generation) -> Written:
        written = write_files(generation.files)
        unchanged = sorted(set(generation.files) - set(written))
        removed = remove_files(generation.orphans)
        return Written(written, unchanged, removed, generation.dropped, generation.warnings)

    def check(self, paths: Sequence[Path] = (), cache: bool = True) -> list[Drift]:
        """Every generated file under `paths` that `generate` would change, and every snapshot
        that cannot be read (a tampered snapshot is a finding of `check`, not a crash)."""
        paths = list(paths) or [self.out]
        verdicts = self._verdicts(cache)
        snapshots: dict[Path, Snapshot] = {}
        broken: list[Drift] = []
        for path in self.snapshot_paths(paths):
            if not is_regular(path):
                broken.append(Drift(path, NOT_REGULAR, repair=FOREIGN))
                continue
            try:
                snapshots[path] = load(path, rows=False)
                render.module_path(path, snapshots[path])
                _verify_tasks(path, snapshots[path], verdicts)
            except (SnapshotError, RefusedWrite) as exc:
                snapshots.pop(path, None)
                broken.append(Drift(path, "invalid snapshot: " + str(exc).removeprefix(f"{path}: "), repair=RECAPTURE))
        trust = self._trust(snapshots)
        expected = self._jobs(snapshots)
        found = self._layout(paths, snapshots, [job.path for job in expected], [drift.path for drift in broken])
        orphaned = [Drift(path, _orphan_cause(path, snapshots)) for path in found.orphans]
        problems = [Drift(problem.path, problem.cause, repair=MIXTURE) for problem in found.partial]
        competing = (*found.problems, *self._shadows(paths))
        problems += [Drift(problem.path, problem.cause, repair=FOREIGN) for problem in competing]
        for job in expected:  # other versions installed: one line saying which, before any render
            if job.inputs[0] == "lock" and (differs := lock.mismatch(job.path)) is not None:
                raise lock.OtherVersions(differs)
        with render_deadline("check"):
            drift = compare(expected, verdicts)
        return sorted(broken + trust + drift + orphaned + problems, key=lambda drift: drift.path)

    def _shadows(self, paths: Sequence[Path]) -> list[layout.Problem]:
        """What `import <out>.<module>` could find instead of the output directory, when it is
        among the checked paths (`orlgen.review.shadows`)."""
        if not any(path.resolve() == self.out.resolve() for path in paths):
            return []
        return shadows.shadows(self.root, self.out)

    def _trust(self, snapshots: Mapping[Path, Snapshot]) -> list[Drift]:
        """Snapshots whose target a reviewer could misread, or that send secrets where the
        config does not say they go (`orlgen.review.targets`)."""
        granted = targets.grants((env.target, env.secrets) for env in self.config.envs)
        found = ((path, targets.problem(snapshot, granted)) for path, snapshot in snapshots.items())
        return [Drift(path, why, repair=TRUST) for path, why in found if why is not None]

    def _modules_of(self, snapshot_path: Path) -> list[Path]:
        """The modules a snapshot file renders, by its file name alone: its own, its models file
        and its mixtures'. An invalid snapshot is reported itself; its modules are not called orphans."""
        name = snapshot_path.name.removesuffix(SUFFIX)
        mixtures = [mixture for mixture, members in self.mixtures().items() if name in members]
        return [
            *_owned_by_name([snapshot_path]),
            snapshot_path.with_name(f"{name}{render.MODELS_SUFFIX}.py"),
            *(
                snapshot_path.with_name(f"{module}{module_suffix(each)}.py")
                for module in [name, *mixtures]
                for each in trainer_names()
            ),
            *(
                snapshot_path.with_name(f"{name}{extra.suffix}")
                for each in trainer_names()
                for extra in trainer(each).extra_files
            ),
        ]

    # ---------------------------------------------------------------------------------------
    # live: capture, save, compare
    # ---------------------------------------------------------------------------------------

    def capture(
        self, target: str, options: CaptureOptions, progress: Progress | None = None, out: Path | None = None
    ) -> Snapshot:
        """Capture `target`; a `--name` that could not name a module is refused before any
        network traffic. With `out`, the capture takes the name its environment has there."""
        from orlgen.capture.live import capture  # the wire: offline commands never import it

        if options.name is not None:
            check_name(options.name, "module name")
        captured = capture(target, options, progress=progress)
        return captured if out is None else settle_name(captured, out, options.name)

    def capture_like(
        self, target: str, like: Snapshot, progress: Progress | None = None, secrets: Mapping[str, str] | None = None
    ) -> Snapshot:
        """Capture `target` the way `like` was captured (see `orlgen.capture.recapture`)."""
        from orlgen.capture.live import capture  # the wire: offline commands never import it

        return capture(target, recapture.options_like(like, target, secrets), progress=progress)

    def save(self, captured: Snapshot, out: Path, generate: bool) -> tuple[Path, Written]:
        """Write a capture's snapshot (its two files, serialised once) and, with `generate`, its
        module and those of the mixtures it is a member of; the directory's other modules are
        not rendered again (their snapshots did not change).

        Everything is rendered before anything is written, so a failure writes nothing; the
        snapshot is written after its modules (see `files.write_files`)."""
        path = out / f"{check_name(captured.name, 'module name')}{SUFFIX}"
        previous = recorded_target(path) if path.exists() else None
        _refuse_other_env(path, previous, captured)
        sealed, files = captured.written(path)
        snapshots = {path: sealed}
        said = [shadow_warning(captured.target, captured.name), _retargeted(previous, captured)]
        warnings = _renamed(snapshots) + tuple(filter(None, said))
        if generate:
            others = [other for other in snapshots_in(out) if other != path]
            members = self._mixed_with(captured.name, others)
            snapshots |= {other: load(_regular(other), rows=False) for other in members}
            jobs = [
                job  # the other members' own modules did not change
                for job in render.jobs(
                    snapshots.items(), self.config.templates, self.mixtures(), self.trainers(snapshots), self.weights()
                )
                if job.inputs[0] != "module" or job.inputs[2] == captured.name
            ] + self._lock_jobs({path: sealed})
            untouched = [other for other in others if other not in members]
            found = self._layout(
                [out], snapshots, [*files, *(job.path for job in jobs), *_owned_by_name(untouched)], untouched
            )
            _refuse(found.problems)
            # a mixture waits for its other members, as `sync` captures them one by one
            warnings += tuple(
                f"{problem} (`orlgen check` fails until every member has a snapshot)" for problem in found.partial
            )
            files |= self._rendered("snapshot", jobs, {path: snapshots[path]}, self._verdicts(True))
        generation = Generation(files, dropped=_dropped({path: snapshots[path]}), warnings=warnings)
        return path, self.write(generation)

    def _mixed_with(self, name: str, others: Sequence[Path]) -> list[Path]:
        """The snapshot files, among `others`, of the members of mixtures `name` belongs to."""
        names = {member for members in self.mixtures().values() if name in members for member in members}
        return [other for other in others if other.name.removesuffix(SUFFIX) in names]

    def live_check(
        self, target: str, out: Path, options: CaptureOptions, progress: Progress | None = None
    ) -> LiveCheck:
        """`snapshot --check`: the checked-in snapshot of `target` in `out` (by `--name`, else the
        one of the same target), and how the live environment, captured the way that snapshot
        was, differs from it."""
        path = self._checked_in(target, out, options)
        before = load(path)
        live = self.capture_like(target, before, progress, options.secrets)
        return LiveCheck(path, before, live, diff(before, live, live=True, rules=self.config.diff.review_rules()))

    def _checked_in(self, target: str, out: Path, options: CaptureOptions) -> Path:
        """By `--name`, else the snapshot of the environment `target` reaches: the one a plain
        `snapshot` of `target` would update (`identity.settle_name`), whatever target form it
        was captured from."""
        name = options.name
        if name is not None:
            path = out / f"{check_name(name, 'module name')}{SUFFIX}"
            if not path.exists():
                raise UsageError(f"{path}: no checked-in snapshot to compare with")
            return path
        from orlgen.capture.live import identify  # the wire: offline commands never import it

        reached = identify(target, options)
        found = existing_module(out, reached)
        if found is None:
            raise UsageError(
                f"{out}: no checked-in snapshot of env {reached.env!r} ({target!r}) to compare with (name it with --name)"
            )
        return found[0]

    def diff(self, old: Path, against: str, progress: Progress | None = None) -> Comparison:
        """`diff OLD --against NEW`: every change this project's rules report from a snapshot file
        to another snapshot file, or to a live target captured the way OLD was. Stored tasks are
        compared only when every snapshot file given has its tasks file beside it: an interface
        file alone (`git show HEAD:x.snapshot.json > old.snapshot.json`) holds the surface and the
        task counts, which is what a review of the surface needs."""
        files = [old] if not against.endswith(SUFFIX) else [old, Path(against)]
        lone = [tasks_path(path) for path in files if _lacks_its_tasks(path)]
        before, *after = (load(path, rows=not lone) for path in files)
        rules = self.config.diff.review_rules()
        if after:
            changes = diff(before, after[0], rules=rules)
        else:
            changes = diff(before, self.capture_like(against, before, progress), live=True, rules=rules)
        note = f"stored tasks not compared: {lone[0]} is absent; the surface and task counts are" if lone else None
        return Comparison(changes, note)

    def vet(self, paths: Sequence[Path], count_tokens: Callable[[str], int] | None = None) -> list[Finding]:
        """`vet`: the findings this project's rules report on the tool surface of each snapshot
        given (default: every snapshot in `out`); a snapshot's tasks are not read."""
        rules = self.config.vet.rules()
        files = list(paths) or snapshots_in(self.out)
        return [finding for path in files for finding in vet(load(path, rows=False), rules, count_tokens)]


@dataclass(frozen=True)
class Comparison:
    """`diff`'s findings, and what it could not compare (one line), if anything."""

    changes: list[Change]
    note: str | None = None


def _lacks_its_tasks(path: Path) -> bool:
    """A snapshot whose interface records stored tasks, without its tasks file beside it."""
    return load(path, rows=False).tasks_sha256 is not None and not tasks_path(path).exists()


def snapshots_in(directory: Path) -> list[Path]:
    return sorted(directory.glob(f"*{SUFFIX}"))


def _tasks_jobs(snapshots: dict[Path, Snapshot]) -> list[render.Job]:
    """The tasks file of each snapshot that stores tasks: its own text once verified (hash and
    canonical lines), or, for a snapshot whose rows were read (format 1), the rows written out."""
    return [
        render.Job(
            tasks_path(path),
            ("tasks", snapshot.tasks_sha256),
            snapshot.rows_text if snapshot.rows_read else functools.partial(tasks_text, path, snapshot.tasks_sha256),
        )
        for path, snapshot in snapshots.items()
        if snapshot.tasks_sha256 is not None
    ]


def _verify_tasks(path: Path, snapshot: Snapshot, verdicts: Verdicts | None) -> None:
    """`check`: a snapshot's tasks file must be its verified text (a `SnapshotError` naming it
    if not), unless the verdict cache already holds these bytes current; a verified file is
    remembered, so comparing it next costs a hash."""
    jobs = _tasks_jobs({path: snapshot})
    if not jobs or snapshot.rows_read:
        return
    job = jobs[0]
    actual = job.path.read_bytes() if is_regular(job.path) else None
    if actual is not None and verdicts is not None and verdicts.current(job, actual):
        return
    verified = job.render().encode()
    if verdicts is not None and verified == actual:
        verdicts.remember(job, verified)


def _owned_by_name(paths: Sequence[Path]) -> list[Path]:
    """The files a snapshot file owns by its name alone (read by nothing): its tasks file."""
    return [tasks_path(path) for path in paths]


def _dropped(snapshots: dict[Path, Snapshot]) -> tuple[Dropped, ...]:
    return tuple(found for snapshot in snapshots.values() for found in dropped_keywords(snapshot))


_ORPHANED = "orphaned: generated by orlgen, but no snapshot renders it (`orlgen generate` removes it)"


def _is_entry_of(env: EnvConfig, snapshot: Snapshot) -> bool:
    """Whether a `[[tool.orlgen.envs]]` entry is the one `sync` captured `snapshot` from: its
    `name`, when it sets one; else its target, as a capture records it (a URL's base, its
    credentials dropped) and, when it sets one, its env key."""
    if env.name is not None:
        return env.name == snapshot.name
    if env.env is not None and env.env != snapshot.target.env:
        return False
    try:
        recorded = server_url(env.target) if snapshot.target.kind == "url" else env.target
    except CaptureError:
        return False
    return recorded == snapshot.target.value


def _orphan_cause(path: Path, snapshots: Mapping[Path, Snapshot]) -> str:
    """Why nothing renders an orphan; the module of a trainer an env no longer lists says so."""
    for snapshot_path, snapshot in snapshots.items():
        for each in trainer_names():
            if path == module_path(snapshot_path, snapshot, module_suffix(each)):
                return (
                    f"orphaned: the {each} module of {snapshot.name}, a trainer pyproject.toml does not list for it "
                    f"(`orlgen generate` removes it; add {each!r} to its `trainers` to keep it)"
                )
    return _ORPHANED


def _refuse(problems: Sequence[layout.Problem]) -> None:
    """Writes wait until the directory holds nothing that would make `check` fail."""
    if problems:
        more = f" (and {len(problems) - 1} more: `orlgen check` lists them)" if len(problems) > 1 else ""
        raise RefusedWrite(f"{problems[0]}{more}")


def _renamed(snapshots: dict[Path, Snapshot]) -> tuple[str, ...]:
    return tuple(found for snapshot in snapshots.values() for found in lookalike_warnings(snapshot))


def _regular(path: Path) -> Path:
    if not is_regular(path):
        raise RefusedWrite(f"{path}: refused to read: not a regular file (a symbolic link or a special file)")
    return path


def _refuse_other_env(path: Path, previous: Target | None, captured: Snapshot) -> None:
    """A capture never replaces the snapshot of another environment that took the same name
    (`previous`: the target the snapshot at `path` records, if any)."""
    if previous is None:
        return  # a broken snapshot of this name is repaired by re-capturing; write_files still
        # refuses a file that is not a snapshot at all
    if not same_env(previous, captured.target):
        raise RefusedWrite(
            f"{path}: refused to overwrite: it is the snapshot of {previous.value!r} (env {previous.env!r}), "
            f"not of {captured.target.value!r}; choose another --name"
        )


def _retargeted(previous: Target | None, captured: Snapshot) -> str | None:
    """The warning for a capture of the same environment from another target (its `module:Class`
    after its URL, or the other way round, or another URL): the snapshot's target is where the
    adapter connects, and a re-capture must not move it without a word. The `TARGET_CHANGED` of
    the pull request's diff says it again to the reviewer."""
    now = captured.target
    if previous is None or (previous.kind, previous.value) == (now.kind, now.value):
        return None
    return (
        f"{captured.name}: the snapshot's target changes from {_shown(previous)} to {_shown(now)}; "
        "the adapter now connects there"
    )


def _shown(target: Target) -> str:
    """A target for a one-line message: its kind and value, any URL credentials masked, invisible
    characters escaped (a capture records a URL without its credentials; the mask covers a hand-edited snapshot)."""
    return f"{target.kind} {printable(redact(target.value))}"
