"""Keys and session secrets: which key a connection carries, the `X-Secrets` header, and which
host may receive which secret.

ORS passes a session's secrets in one header at `/create_session` and `/create`: base64 of the
JSON object `{name: {"value": ..., "allowed_domains": [...]}}` (ors-sdk 0.1.0 reads them from
`/create`'s body instead: `ors.Client.secrets_in_body`). On the OpenReward platform the
allowed domains are enforced by the sandbox's egress proxy: the secret can reach only those
hosts. For the well-known names (vendor API keys) the domains come from `WELL_KNOWN_SECRETS`,
orlgen's own copy of the SDK's table (`tests/test_ors_client.py` holds it equal to the SDK's),
so that the runtime does not lean on an SDK internal that may change in any release.

A self-hosted server (a URL target) receives the values itself; no proxy stands between. So a
secret is sent to it only when its allowed domains name that server's host (a name outside the
table is allowed the host that serves the environment, as before), or when the server is on
this machine's loopback. A resealed target pointing at another host therefore cannot collect a
vendor key: the secret is left out, and a warning names it (never its value). A snapshot's URL
target that is not on loopback and that nobody named for this run (`base_url=`,
`ORLGEN_<NAME>_URL`) is not allowed a name outside the table either, nor the API key
(`for_unnamed_target`): its host is what a resealed snapshot changes.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import logging
import os
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from ..log import log_once
from ..redaction import public_url

logger = logging.getLogger("orlgen")

# Session secrets, by who wins. `api_key=` is the OpenReward key: it authenticates requests and
# is forwarded to every session (as the SDK does) as the `api_key` and `OPENREWARD_API_KEY`
# secrets, replacing any caller value of those two. So a key given only in `secrets=` under one
# of these names is promoted to the API key, rather than being overwritten by an empty one; an
# explicit `api_key=` beats it. The `OPENREWARD_API_KEY` environment variable comes last, and
# only for the platform (`platform_key`): a self-hosted server never gets it unasked.
API_KEY_SECRETS = ("api_key", "OPENREWARD_API_KEY")


def choose_api_key(api_key: str | None, secrets: Mapping[str, Any] | None) -> str | None:
    """The key the caller gave explicitly: `api_key=`, else one passed as a secret, else None."""
    if api_key:
        return api_key
    for name in API_KEY_SECRETS:
        value = (secrets or {}).get(name)
        if isinstance(value, str) and value:
            return value
    return None


def platform_key(api_key: str | None) -> str | None:
    """The key for a catalog (platform) connection: the explicit one, else the
    `OPENREWARD_API_KEY` environment variable. Read here, so that it is part of
    the connection a handle is cached under. A URL connection (a self-hosted server, a served
    `module:Class`) never falls back to it: the platform key is sent only to the platform."""
    return api_key or os.environ.get("OPENREWARD_API_KEY") or None


def secrets_from_env(names: Iterable[str]) -> dict[str, str]:
    """The values of the environment variables `names` that are set (a generated adapter's
    default secrets: the snapshot records the names an environment needs, never the values)."""
    return {name: os.environ[name] for name in names if os.environ.get(name)}


_KNOWN: dict[str, list[str]] = {
    "OPENAI_API_KEY": ["api.openai.com"],
    "ANTHROPIC_API_KEY": ["api.anthropic.com"],
    "GEMINI_API_KEY": ["generativelanguage.googleapis.com"],
    "TAVILY_API_KEY": ["api.tavily.com"],
    "GOOGLE_API_KEY": ["generativelanguage.googleapis.com"],
    "COHERE_API_KEY": ["api.cohere.com"],
    "MISTRAL_API_KEY": ["api.mistral.ai"],
    "GROQ_API_KEY": ["api.groq.com"],
    "TOGETHER_API_KEY": ["api.together.xyz"],
    "REPLICATE_API_TOKEN": ["api.replicate.com"],
    "HUGGINGFACE_API_KEY": ["api-inference.huggingface.co", "huggingface.co"],
    "HF_TOKEN": ["huggingface.co", "api-inference.huggingface.co"],
    "HUGGING_FACE_HUB_TOKEN": ["huggingface.co", "api-inference.huggingface.co"],
    "PERPLEXITY_API_KEY": ["api.perplexity.ai"],
    "FIREWORKS_API_KEY": ["api.fireworks.ai"],
    "DEEPSEEK_API_KEY": ["api.deepseek.com"],
    "KAGGLE_KEY": ["www.kaggle.com"],
    "KAGGLE_USERNAME": ["www.kaggle.com"],
    "KAGGLE_API_KEY": ["www.kaggle.com"],
    "E2B_API_KEY": ["api.e2b.app"],
    "MODAL_TOKEN_ID": ["api.modal.com"],
    "MODAL_TOKEN_SECRET": ["api.modal.com"],
    "DAYTONA_API_KEY": ["app.daytona.io"],
}
# The SDK also lists each name in lower case (and one lower-case-only name).
WELL_KNOWN_SECRETS: dict[str, list[str]] = {
    **_KNOWN,
    **{name.lower(): domains for name, domains in _KNOWN.items()},
    "gh_auth_token": [
        "github.com",
        "api.github.com",
        "uploads.github.com",
        "objects.githubusercontent.com",
        "raw.githubusercontent.com",
    ],
}
# First-party services the OpenReward key may reach from a sandbox (the SDK's list, env-overridable).
SERVICE_URLS = (
    ("OPENREWARD_WEB_SEARCH_URL", "https://search.openreward.ai/search"),
    ("OPENREWARD_WEB_FETCH_URL", "https://search.openreward.ai/fetch"),
)

Secrets = dict[str, tuple[str, list[str]]]  # name → (value, allowed domains)


def host_of(url: str | None) -> str | None:
    return urllib.parse.urlsplit(url or "").hostname


def allowed(secrets: Mapping[str, Any] | None, serving_url: str) -> Secrets:
    """Every secret with its allowed domains: a `(value, domains)` pair as given, a well-known
    name's domains from the table, any other name the serving host."""
    host = host_of(serving_url)
    result: Secrets = {}
    for name, entry in (secrets or {}).items():
        if isinstance(entry, tuple):
            value, domains = entry
            result[name] = (str(value), [str(domain) for domain in domains])
        elif isinstance(entry, str):
            result[name] = (entry, list(WELL_KNOWN_SECRETS.get(name, [host] if host else [])))
    return result


def with_api_key(secrets: Secrets, api_key: str | None, session_url: str, api_url: str | None) -> Secrets:
    """The OpenReward key forwarded as the `api_key` and `OPENREWARD_API_KEY` secrets, as the SDK
    does, allowed the platform's hosts and its first-party services (and their `.internal` twins)."""
    if not api_key:
        return secrets
    domains: list[str] = []
    for url in (session_url, api_url, *(os.environ.get(var, default) for var, default in SERVICE_URLS)):
        host = host_of(url)
        if host and host not in domains:
            domains.append(host)
    domains += [f"{host.split('.')[0]}.openreward.internal" for host in list(domains) if host.count(".") >= 2]
    return {**secrets, **{name: (api_key, domains) for name in API_KEY_SECRETS}}


def for_host(secrets: Secrets, serving_url: str, platform: bool) -> Secrets:
    """The secrets that may be sent to the server at `serving_url`: all of them on the platform
    (its proxy enforces the domains); for a self-hosted server, those whose domains name its host,
    or all when it is on loopback. Each one left out is logged by name."""
    if platform or on_loopback(serving_url):
        return secrets
    host = host_of(serving_url) or ""
    kept = {name: entry for name, entry in secrets.items() if host in entry[1]}
    for name in sorted(set(secrets) - set(kept)):
        logger.warning(
            "secret %s not sent to %s: its allowed domains are %s", name, host, ", ".join(secrets[name][1]) or "none"
        )
    return kept


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def on_loopback(url: str) -> bool:
    """Whether `url` names this machine (a trailing dot is the same host); a URL that cannot be
    parsed names none. What may receive a key unasked: `check` and the runtime both ask here, so
    a target `check` lets pass without a config entry is one the runtime trusts, and no other."""
    try:
        host = host_of(url)
    except ValueError:
        return False
    return host is not None and is_loopback(host.rstrip("."))


def for_unnamed_target(secrets: Mapping[str, Any] | None, url: str, api_key: str | None, how: str) -> Secrets:
    """The secrets a snapshot's own target may receive when nobody named it for this run and it is
    not on loopback (`Connection.trusted` is False): only those whose domains name its host, by
    the table or by a `(value, domains)` pair the caller gave. A name outside the table is not
    allowed the serving host here, as it is elsewhere (`allowed`): that host is what a resealed
    snapshot changes. What is withheld (the caller's key too, which `Connection.resolve` kept
    back) is said once per process and address, by name, never by value."""
    host = host_of(url) or ""
    kept = {name: entry for name, entry in allowed(secrets, "").items() if host in entry[1]}
    withheld = sorted(set(secrets or {}) - set(kept)) + (["the API key"] if api_key else [])
    if withheld:
        where = public_url(url, mask="***")
        log_once(
            f"unnamed target {where}",
            f"{', '.join(withheld)} not sent to {where}: it is the snapshot's target, not on loopback and not named "
            f"for this run; name it with {how} to send them there",
        )
    return kept


def header(secrets: Secrets) -> str:
    """The `X-Secrets` value: base64 of `{name: {value, allowed_domains}}`."""
    payload = {name: {"value": value, "allowed_domains": domains} for name, (value, domains) in secrets.items()}
    return base64.b64encode(json.dumps(payload).encode()).decode()
