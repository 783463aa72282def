"""Targets as a reviewer must see them: what `check` says about where a snapshot connects.

A snapshot's target is where the generated adapter connects by default, and its secret names
are the environment variables whose values it sends there. A pull request can reseal both, and
regenerate the module, so the byte comparison is green. Three rules make that visible:

- a `module:Class` target is plain ASCII identifiers (`lookalike.module_target_problem`), so a
  look-alike module (`examples.еcho`, Cyrillic е) cannot hide in a diff;
- secrets go only where the project's `pyproject.toml` says they go: a snapshot that names
  secrets needs a `[[tool.orlgen.envs]]` entry with its target and those secrets. Moving the
  secrets to another host, or adding one, is then an edit of the config a reviewer reads, and
  `check` names it (TARGET_CHANGED / SECRETS_CHANGED, as `orlgen diff` does);
- a snapshot connects to another machine only where the config says, secrets or not: a
  training script's `api_key=` or `secrets={...}` go wherever the snapshot points, so a URL
  target off loopback that no entry names is TARGET_CHANGED too. A `module:Class` target runs
  the repository's own code on loopback, a loopback URL stays on the training machine and a
  catalog name reaches the OpenReward platform whichever env it names: these need an entry only
  when they name secrets, so `orlgen snapshot http://localhost:8080` or `Owner/Env` with no
  config entry still checks green.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping

from orlgen import lookalike
from orlgen.runtime.ors.secrets import on_loopback
from orlgen.snapshot.model import Snapshot, Target

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(target: str) -> str:
    """Who receives a target's requests: `scheme://host:port` of a URL (the path, user-info and
    query do not change the host), the target itself otherwise."""
    if "://" not in target:
        return target
    try:
        parts = urllib.parse.urlsplit(target)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme, 0)
    except ValueError:
        return target
    return f"{parts.scheme}://{(parts.hostname or '').rstrip('.')}:{port}"


def grants(entries: Iterable[tuple[str, Iterable[str]]]) -> dict[str, frozenset[str]]:
    """The config's (target, secret names) entries as origin → the secrets it may receive."""
    found: dict[str, frozenset[str]] = {}
    for target, names in entries:
        found[origin(target)] = found.get(origin(target), frozenset()) | frozenset(names)
    return found


def problem(snapshot: Snapshot, granted: Mapping[str, frozenset[str]]) -> str | None:
    """Why `check` must fail on this snapshot's target, or None."""
    if snapshot.target.kind == "module":
        why = lookalike.module_target_problem(snapshot.target.value)
        if why is not None:
            return f"TARGET_CHANGED: target refused: {why}"
    return _secrets_problem(snapshot.target, sorted(snapshot.secret_names), granted) or _host_problem(
        snapshot.target, granted
    )


def _secrets_problem(target: Target, names: list[str], granted: Mapping[str, frozenset[str]]) -> str | None:
    if not names:
        return None
    where = origin(target.value)
    allowed = granted.get(where)
    declare = f"declare it in pyproject.toml: [[tool.orlgen.envs]] target = {target.value!a}, secrets = {names}"
    if allowed is None:
        return (
            f"TARGET_CHANGED: sends the secrets {names} to {where!a}, which no [[tool.orlgen.envs]] "
            f"target names; {declare}"
        )
    extra = sorted(set(names) - allowed)
    if extra:
        return f"SECRETS_CHANGED: sends {extra} to {where!a}, which pyproject.toml does not grant it; {declare}"
    return None


def _host_problem(target: Target, granted: Mapping[str, frozenset[str]]) -> str | None:
    """A URL target on another machine that no config entry names, whatever secrets it names."""
    where = origin(target.value)
    if target.kind != "url" or where in granted or on_loopback(target.value):
        return None
    return (
        f"TARGET_CHANGED: connects to {where!a}, which no [[tool.orlgen.envs]] target names (a training "
        f"script's api_key= and secrets= go there); declare it in pyproject.toml: [[tool.orlgen.envs]] "
        f"target = {target.value!a}"
    )
