"""A run directory, `--out DIR`: `config.json`, `rollouts.jsonl`, `report.html`, and its resume.

`config.json` holds everything that decides the rollouts (the subject and its snapshots' sha256,
the model and its endpoint, never a key; splits, n, k, seed, sampling, limits, orlgen's version),
sealed twice: the sha256 of its canonical JSON, so one edited by hand is refused rather than
trusted, and an HMAC of it under this machine's secret key (`seal`; the key of `check`'s verdict
cache, `orlgen/machine_key.py`: 32 random bytes, 0600, outside any repository). config.json names a
subject to import, an endpoint and the variable whose value goes there as the key: a run
directory from elsewhere (committed, a CI artifact, another user's) carries no seal of this key,
and `--resume DIR` alone refuses it before anything is imported or sent (`sealed_here`); given
SUBJECT and the model options again, it resumes on the command line's word and is sealed anew
(`restate`). It also holds the pass threshold, which decides no rollout,
only the numbers: not compared, it is the last session's (`restate`), so the report the run
directory holds counts passes as the table printed last did. `rollouts.jsonl` gets a row per
rollout as it finishes (the rows of `records`). A resume plays the (env, split, task_index,
sample) keys that have no row, or whose row ended in an infrastructure error (those rows move to
`superseded.jsonl` first, so the rows file holds one row per key), and appends.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .. import __version__
from ..disk import write_atomic
from ..machine_key import default_directory, machine_key
from .errors import EvalError
from .records import STDOUT, rollout_of
from .rollout import Rollout

CONFIG = "config.json"
ROWS = "rollouts.jsonl"
SUPERSEDED = "superseded.jsonl"
LAYOUT = 1  # `orlgen_eval_run` in config.json: what marks a directory as a run of this layout
RETRIED = ("env_error", "policy_error", "crashed")  # outcomes that measured the infrastructure, not the model
# config.json's keys, each an `Options` field, that decide the rollouts (compared on resume).
DECIDING = {
    "subject": "subject",
    "env": "env",
    "model": "model",
    "endpoint": "base_url",
    "hf_model": "hf_model",
    "splits": "splits",
    "num_tasks": "num_tasks",
    "k": "k",
    "seed": "seed",
    "temperature": "temperature",
    "max_turns": "max_turns",
    "max_tokens": "max_tokens",
    "max_tool_calls": "max_tool_calls",
}
REACH = ("env_url", "api_key_env")  # where the env and the key are: kept for `--resume DIR`, never compared
THRESHOLD = "pass_threshold"  # decides the numbers, not the rollouts: kept, never compared

Key = tuple[str, str, int, int]  # (env, split, task_index, sample): `Rollout.key`


def is_run_dir(out: Path | None) -> bool:
    """`--out` names a run directory unless it is `-` or ends in `.jsonl` (today's single file)."""
    return out is not None and str(out) != STDOUT and not out.name.endswith(".jsonl")


def config_of(options: dict[str, Any], environments: dict[str, str]) -> dict[str, Any]:
    """The configuration of a run: `options` (the `Options` fields) and each environment's
    snapshot sha256, by name."""
    config: dict[str, Any] = {"orlgen_eval_run": LAYOUT, "orlgen": __version__, "environments": environments}
    for key, field in DECIDING.items():
        config[key] = options[field]
    config["splits"] = list(options["splits"])
    config["endpoint"] = _without_credentials(options["base_url"])
    config["reach"] = {name: options[name] for name in REACH}
    config[THRESHOLD] = options[THRESHOLD]
    return config


def _without_credentials(url: str | None) -> str | None:
    if url is None:
        return None
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def options_of(config: dict[str, Any]) -> dict[str, Any]:
    """The `Options` fields a stored configuration sets, for `--resume DIR` with no SUBJECT."""
    fields = {field: config[key] for key, field in DECIDING.items()}
    fields["splits"] = tuple(config["splits"])
    return fields


def restate(directory: Path, stored: dict[str, Any], asked: dict[str, Any]) -> None:
    """Record this session's pass threshold in the run's config.json (sealed again) when it
    differs from the stored one: the report is drawn from config.json, and must count passes as
    the table this session prints. A run sealed elsewhere, resumed on this command line's word
    (its settings compared already), is sealed with this machine's key."""
    if stored.get(THRESHOLD) != asked[THRESHOLD] or not sealed_here(stored):
        write_atomic(directory / CONFIG, _sealed({**stored, THRESHOLD: asked[THRESHOLD]}))


def difference(stored: dict[str, Any], asked: dict[str, Any]) -> str | None:
    """The first setting that decides the rollouts and differs, in words; None when none does."""
    for key in ("orlgen", "environments", *DECIDING):
        if stored.get(key) != asked.get(key):
            return changed(key, stored.get(key), asked.get(key))
    return None


def changed(key: str, stored: Any, asked: Any) -> str:
    """One setting's difference, as the refusal names it."""
    as_json = [list(value) if isinstance(value, tuple) else value for value in (stored, asked)]
    return f"{key} is {json.dumps(as_json[0])} in config.json, {json.dumps(as_json[1])} now"


def create(directory: Path, config: dict[str, Any]) -> None:
    """Start a run in `directory` (new, or empty): its sealed config.json, an empty rows file."""
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise EvalError(f"--out {directory} is not a directory (a name ending in .jsonl writes one file)")
    if (directory / CONFIG).exists():
        raise EvalError(f"--out {directory} holds a run already: add --resume to continue it, or name a new directory")
    if directory.exists() and any(directory.iterdir()):
        raise EvalError(f"--out {directory} is not empty and holds no orlgen eval run: name a new or empty directory")
    directory.mkdir(parents=True, exist_ok=True)
    write_atomic(directory / CONFIG, _sealed(config))
    write_atomic(directory / ROWS, b"")


def _sealed(config: dict[str, Any]) -> bytes:
    """config.json's bytes: the body, its `seal` (HMAC under this machine's key), and the sha256
    of both."""
    body = _body(config)
    signed = {**body, "seal": _machine_seal(body)}
    return (json.dumps({**signed, "sha256": _digest(signed)}, indent=2, sort_keys=True) + "\n").encode()


def _body(config: dict[str, Any], seals: tuple[str, ...] = ("sha256", "seal")) -> dict[str, Any]:
    """`config` without its seals (by default both; the sha256 covers the `seal`)."""
    return {name: value for name, value in config.items() if name not in seals}


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(_canonical(body)).hexdigest()


def _machine_seal(body: dict[str, Any]) -> str | None:
    """The HMAC of `body` under this machine's (and user's) key; None when there is no usable
    key (then no run is sealed here, and `--resume DIR` alone is refused, never trusted)."""
    key = machine_key()
    return None if key is None else hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()


def sealed_here(config: dict[str, Any]) -> bool:
    """Whether this machine's key sealed `config`: whether orlgen eval wrote it here, as this user."""
    seal, expected = config.get("seal"), _machine_seal(_body(config))
    return isinstance(seal, str) and expected is not None and hmac.compare_digest(seal.encode(), expected.encode())


def foreign(directory: Path, config: dict[str, Any]) -> str:
    """The refusal of `--resume DIR` alone for a run sealed elsewhere, naming what it would have
    used (each value as JSON, cut short: one line, no terminal control characters)."""
    reach = config["reach"] if isinstance(config.get("reach"), dict) else {}
    env_url = reach.get("env_url")
    named = {
        "subject": config.get("subject"),
        "endpoint": config.get("endpoint"),
        "key variable": reach.get("api_key_env") or "OPENAI_API_KEY",
        "env": _without_credentials(env_url) if isinstance(env_url, str) else env_url,
    }
    shown = ", ".join(f"{what} {json.dumps(value)[:200]}" for what, value in named.items())
    return (
        f"--resume {directory}: refused, its config.json was not sealed on this machine (another machine, user or "
        f"key wrote it; the key is in {default_directory()}); it names {shown}: to continue it here, give SUBJECT "
        "and the model options again"
    )


def read_config(directory: Path) -> dict[str, Any]:
    """The configuration of the run in `directory`; one line naming what is wrong otherwise."""
    if directory.is_symlink():
        raise EvalError(f"--resume {directory} is a symbolic link: refused (name the directory itself)")
    if not directory.is_dir():
        raise EvalError(f"--resume {directory}: no such run directory")
    path = directory / CONFIG
    if not path.is_file():
        raise EvalError(f"--resume {directory} is not an orlgen eval run directory (it has no {CONFIG})")
    try:
        config = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvalError(f"{path} is not JSON ({exc}): it was not written by orlgen eval") from exc
    if not isinstance(config, dict) or config.get("orlgen_eval_run") != LAYOUT:
        raise EvalError(f"{path} is not the config of an orlgen eval run (layout {LAYOUT})")
    if config.get("sha256") != _digest(_body(config, ("sha256",))):
        raise EvalError(f"{path} was edited by hand (its sha256 no longer matches it): resume refused")
    missing = [key for key in ("orlgen", "environments", "reach", *DECIDING) if key not in config]
    if missing:
        raise EvalError(f"{path} lacks {', '.join(missing)}: it was not written by this orlgen eval")
    return config


@dataclass(frozen=True)
class Row:
    """One line of a rows file: as written (`line`), as read (`data`), and the rollout it counts
    as (`records.rollout_of`)."""

    line: bytes
    data: dict[str, Any]
    rollout: Rollout


def read_rows(path: Path) -> list[Row]:
    """The rows of a rows file (none when there is no file). A last line without its newline is
    a row a kill cut short (its rollout was never written whole): it is left out, and a resumed
    run plays it again. Any other line that is not a row is an error naming it."""
    try:
        data = path.read_bytes() if path.exists() else b""
    except OSError as exc:
        raise EvalError(f"cannot read {path}: {exc.strerror}") from exc
    return [_row(path, number, line) for number, line in enumerate(data.split(b"\n")[:-1], 1)]


def _row(path: Path, number: int, line: bytes) -> Row:
    try:
        data = json.loads(line)
        return Row(line, data, rollout_of(data))
    except (ValueError, UnicodeDecodeError, TypeError, KeyError) as exc:
        raise EvalError(f"{path} line {number} is not a row of orlgen eval ({type(exc).__name__}: {exc})") from exc


def carried(directory: Path, planned: Iterable[Key]) -> list[Row]:
    """The rows of the run in `directory` that a resume keeps: one per planned key, none that
    ended in an infrastructure error. Rows it replays move to `superseded.jsonl`, and a last line
    a kill cut short is dropped (`read_rows`), before the rows file is rewritten (temp, then
    rename)."""
    path = directory / ROWS
    rows = read_rows(path)
    wanted = set(planned)
    kept: dict[Key, Row] = {}
    replayed: list[bytes] = []
    for number, row in enumerate(rows, 1):
        rollout = row.rollout
        if rollout.outcome in RETRIED:
            replayed.append(row.line)
        elif rollout.key not in wanted:
            raise EvalError(f"{path} line {number}: {rollout.key} is not a rollout of this run's configuration")
        elif rollout.key in kept:
            raise EvalError(f"{path} line {number}: a second row for {rollout.key}: the file was edited")
        else:
            kept[rollout.key] = row
    if replayed:
        with open(directory / SUPERSEDED, "ab") as superseded:
            superseded.write(b"".join(line + b"\n" for line in replayed))
    whole = sum(len(row.line) + 1 for row in rows)  # less than the file's size: a line was cut short
    if replayed or (path.exists() and path.stat().st_size != whole):
        write_atomic(path, b"".join(row.line + b"\n" for row in kept.values()))
    return list(kept.values())
