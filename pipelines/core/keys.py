"""API keys: the one place that reads them.

Keys come from the settings (`OutreachSettings.api_key_list`: ``api_keys``, else ``api_key``) or
from a *reference*, which names a key without carrying it (the Prefect flows pass references):

- ``config:<n>`` (or a bare integer): the n-th configured key;
- ``env:<VAR>``: the environment variable ``VAR``;
- ``secret:<name>`` (or a bare name): a secret store. `pipelines` knows no store itself: the layer
  that has one registers a resolver (`register_secret_resolver`; flows registers Prefect's ``Secret``
  blocks), so ``pipelines`` never imports it.

Messages name the reference, never the key.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipelines.core.config import OutreachSettings, resolve_settings
from pipelines.core.errors import ConfigError

SCHEMES = ("secret", "config", "env")

SecretResolver = Callable[[str], str]
"""Given a secret's name, return the key it holds; raise ConfigError (naming the secret) when it cannot."""

_resolvers: dict[str, SecretResolver] = {}
_resolvers_lock = threading.Lock()


@dataclass(frozen=True)
class KeyRef:
    """A parsed key reference; safe to log, show and store."""

    scheme: str
    name: str

    def __str__(self) -> str:
        return f"{self.scheme}:{self.name}"

    def where(self) -> str:
        """Where the key lives, for messages about a rejected key."""
        return {
            "secret": f"the key comes from secret {self.name!r}: update it there",
            "env": f"the key comes from environment variable {self.name}",
            "config": f"the key is number {self.name} (from 0) of the keys in dlt config",
        }[self.scheme]


def parse_key_ref(ref: str | int) -> KeyRef:
    """Parse ``secret:NAME``, ``config:N``, ``env:VAR``, a bare integer or a bare secret name."""
    text = str(ref).strip()
    if not text:
        raise ConfigError("empty workspace key reference: use secret:<block>, config:<n> or env:<VAR>")
    scheme, sep, name = text.partition(":")
    if sep and scheme in SCHEMES:
        if not name:
            raise ConfigError(f"workspace key reference {text!r} names nothing after {scheme!r}")
        if scheme == "config" and not name.isdigit():
            raise ConfigError(f"workspace key reference {text!r}: config:<n> takes an index, e.g. config:0")
        return KeyRef(scheme, name)
    if text.isdigit():
        return KeyRef("config", text)
    return KeyRef("secret", text)


def register_secret_resolver(resolver: SecretResolver, scheme: str = "secret") -> None:
    """Let ``<scheme>:<name>`` references resolve through `resolver` (the flows register Prefect's blocks)."""
    with _resolvers_lock:
        _resolvers[scheme] = resolver


def configured_api_keys(settings: OutreachSettings | None = None) -> list[str]:
    """The keys in dlt config (one workspace each); [] when none is configured."""
    return (settings or resolve_settings()).api_key_list()


def configured_key_refs(settings: OutreachSettings | None = None) -> list[str]:
    """One ``config:<n>`` reference per configured key (the keys themselves stay in config)."""
    return [f"config:{index}" for index in range(len(configured_api_keys(settings)))]


def resolve_key_ref(ref: str | int, settings: OutreachSettings | None = None) -> str:
    """The key a reference points to; ConfigError naming the reference (never the key) when there is none."""
    parsed = parse_key_ref(ref)
    if parsed.scheme == "env":
        value = os.environ.get(parsed.name, "").strip()
        if not value:
            raise ConfigError(f"environment variable {parsed.name} is empty or unset: export it with the API key")
        return value
    if parsed.scheme == "config":
        keys = configured_api_keys(settings)
        index = int(parsed.name)
        if index >= len(keys):
            raise ConfigError(
                f"key reference {parsed} but dlt config holds {len(keys)} key(s): "
                "set SOURCES__OUTREACH__API_KEYS (or SOURCES__OUTREACH__API_KEY) or add them to .dlt/secrets.toml"
            )
        return keys[index]
    with _resolvers_lock:
        resolver = _resolvers.get(parsed.scheme)
    if resolver is None:
        raise ConfigError(
            f"key reference {parsed}: no secret store is available here (secret:<name> references are "
            "resolved by the Prefect flows); use config:<n> or env:<VAR>"
        )
    value = resolver(parsed.name)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"secret {parsed.name!r} holds no API key string")
    return value.strip()


def one_ref_per_key(refs: Sequence[str | int], settings: OutreachSettings) -> tuple[list[str], list[str]]:
    """`refs` with each key once, and a line per reference left out: a key listed twice (the same reference, or two
    config entries or variables holding it) would sync its workspace twice in one run. The keys of ``secret:``
    references are not read here (a call to the store each): of those, only the same reference twice is found."""
    seen: dict[str, str] = {}
    kept: list[str] = []
    left_out: list[str] = []
    for ref in refs:
        parsed = parse_key_ref(ref)
        try:
            same = f"ref {parsed}" if parsed.scheme == "secret" else "key " + resolve_key_ref(ref, settings)
        except ConfigError:  # its own sync says why
            same = f"ref {parsed}"
        if same in seen:
            twice = "is listed twice" if seen[same] == str(parsed) else f"holds the same key as {seen[same]}"
            left_out.append(f"{parsed} {twice}: its workspace is synced once")
            continue
        seen[same] = str(parsed)
        kept.append(str(ref))
    return kept, left_out
