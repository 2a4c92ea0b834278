"""Workspace key references: how a flow names an API key without ever carrying it.

A flow parameter holds a *reference*; the key itself is resolved inside the task that needs it
and is passed straight to the client. Forms:

- ``secret:<name>`` (or a bare name): the Prefect ``Secret`` block ``<name>``;
- ``config:<n>`` (or a bare integer): the n-th key in dlt config
  (``SOURCES__OUTREACH__API_KEYS``, a list or comma-separated string, else ``SOURCES__OUTREACH__API_KEY``,
  or the same keys under ``[sources.outreach]`` in ``.dlt/secrets.toml``);
- ``env:<VAR>``: the environment variable ``VAR``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from pipelines.errors import ConfigError

_SCHEMES = ("secret", "config", "env")


@dataclass(frozen=True)
class KeyRef:
    """A parsed key reference; safe to log, show and store."""

    scheme: str
    name: str

    def __str__(self) -> str:
        return f"{self.scheme}:{self.name}"


def parse_key_ref(ref: str | int) -> KeyRef:
    """Parse ``secret:NAME``, ``config:N``, ``env:VAR``, a bare integer or a bare block name."""
    text = str(ref).strip()
    if not text:
        raise ConfigError("empty workspace key reference: use secret:<block>, config:<n> or env:<VAR>")
    scheme, sep, name = text.partition(":")
    if sep and scheme in _SCHEMES:
        if not name:
            raise ConfigError(f"workspace key reference {text!r} names nothing after {scheme!r}")
        if scheme == "config" and not name.isdigit():
            raise ConfigError(f"workspace key reference {text!r}: config:<n> takes an index, e.g. config:0")
        return KeyRef(scheme, name)
    if text.isdigit():
        return KeyRef("config", text)
    return KeyRef("secret", text)


def _as_key_list(value: Any) -> list[str]:
    """Normalise a configured keys value (list, JSON list or comma-separated string) to a list."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip()
    if text.startswith("["):
        try:
            return _as_key_list(json.loads(text))
        except json.JSONDecodeError:
            pass
    return [part.strip() for part in text.split(",") if part.strip()]


def configured_api_keys() -> list[str]:
    """The API keys in dlt config: ``api_keys`` (several workspaces) or else ``api_key``."""
    import dlt

    for field in ("sources.outreach.api_keys", "sources.outreach.api_key"):
        try:
            keys = _as_key_list(dlt.secrets.get(field))
        except Exception:  # noqa: BLE001 - an unreadable provider counts as "not configured"
            keys = []
        if keys:
            return keys
    return []


def configured_key_refs() -> list[str]:
    """One ``config:<n>`` reference per configured key (the keys themselves stay in config)."""
    return [f"config:{index}" for index in range(len(configured_api_keys()))]


def resolve_api_key(ref: str | int) -> str:
    """Return the key a reference points to; raise ConfigError naming the reference (never the key)."""
    parsed = parse_key_ref(ref)
    if parsed.scheme == "secret":
        return _from_secret_block(parsed.name)
    if parsed.scheme == "env":
        value = os.environ.get(parsed.name, "").strip()
        if not value:
            raise ConfigError(f"environment variable {parsed.name} is empty or unset: export it with the API key")
        return value
    keys = configured_api_keys()
    index = int(parsed.name)
    if index >= len(keys):
        raise ConfigError(
            f"key reference {parsed} but dlt config holds {len(keys)} key(s): "
            "set SOURCES__OUTREACH__API_KEYS (or SOURCES__OUTREACH__API_KEY) or add them to .dlt/secrets.toml"
        )
    return keys[index]


def _from_secret_block(name: str) -> str:
    from prefect.blocks.system import Secret

    try:
        block = Secret.load(name)
    except ValueError as exc:
        raise ConfigError(
            f"Prefect Secret block {name!r} not found: create it with "
            f"`Secret(value=...).save({name!r})` or in the Prefect UI"
        ) from exc
    value = block.get()
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"Prefect Secret block {name!r} holds no API key string")
    return value.strip()
