"""One module per environment in a directory, whatever the target form that reached it.

An environment is what its server says it is: the env key (`/list_environments`, the class
name lowercased), recorded in every snapshot as `target.env`. `travel:TravelDesk` served for the
capture and `http://host:8080` serving the same class are one environment, `traveldesk`, with one
default module name, `traveldesk` (`snapshot.recorded.default_name`; the words of a class name are not something the server tells a
URL capture, so they cannot name the module). A capture of an environment that already has a
module in the output directory keeps that module's name; asking for another name would make a
second module for it, and is refused.
"""

from __future__ import annotations

from pathlib import Path

from orlgen.errors import RefusedWrite
from orlgen.snapshot.model import SUFFIX, Snapshot, SnapshotError, Target, load


def settle_name(captured: Snapshot, out: Path, requested: str | None) -> Snapshot:
    """`captured`, named as its environment is named in `out` already (else as requested, else
    by default). A requested name that differs from the module the env already has is refused."""
    existing = existing_module(out, captured.target)
    if existing is None:
        return captured
    path, name, target = existing
    if requested is not None and requested != name:
        raise RefusedWrite(
            f"{path}: env {target.env!r} already has its module here ({name}.py, captured from {target.value!r}); "
            f"a second one ({requested}.py) is refused: capture it as {name} (drop --name), or remove {path.name}"
        )
    return captured if captured.name == name else captured.model_copy(update={"name": name}).canonical()


def existing_module(out: Path, target: Target) -> tuple[Path, str, Target] | None:
    """The snapshot in `out` of the environment `target` reaches, if any (a snapshot that
    cannot be read names no environment)."""
    for path in sorted(out.glob(f"*{SUFFIX}")) if out.is_dir() else []:
        try:
            snapshot = load(path)
        except (SnapshotError, OSError):
            continue
        if same_env(snapshot.target, target):
            return path, snapshot.name, snapshot.target
    return None


def same_env(a: Target, b: Target) -> bool:
    """Whether two targets reach one environment, as far as the servers say: the same env key.
    A catalog target matches only itself (its key is a guess from the name, not the platform's)."""
    if "catalog" in (a.kind, b.kind):
        return a.kind == b.kind and a.value == b.value
    return a.env == b.env
