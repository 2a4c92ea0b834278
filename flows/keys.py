"""Workspace key references for the flows: `pipelines.core.keys` does the reading; this module plugs in the
one store only the flows have, Prefect's ``Secret`` blocks (``secret:<name>``, or a bare name).

Prefect is imported only when a ``secret:`` reference is resolved. See `pipelines.core.keys` for the forms
(``config:<n>``, ``env:<VAR>``, ``secret:<name>``); keys never appear in a parameter, a log line, a
state or an artifact.
"""

from __future__ import annotations

from typing import Any

from pipelines.core.errors import ConfigError
from pipelines.core.keys import (
    KeyRef,
    configured_api_keys,
    configured_key_refs,
    one_ref_per_key,
    parse_key_ref,
    register_secret_resolver,
    resolve_key_ref,
)

__all__ = [
    "KeyRef",
    "configured_api_keys",
    "configured_key_refs",
    "one_ref_per_key",
    "parse_key_ref",
    "resolve_api_key",
    "where_the_key_lives",
]


def prefect_secret(name: str) -> str:
    """The value of the Prefect Secret block `name`; ConfigError naming the block when there is none."""
    from prefect.blocks.system import Secret

    try:
        block: Any = Secret.load(name)
    except ValueError as exc:
        raise ConfigError(
            f"Prefect Secret block {name!r} not found: create it with "
            f"`Secret(value=...).save({name!r})` or in the Prefect UI"
        ) from exc
    value = block.get()
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"Prefect Secret block {name!r} holds no API key string")
    return value.strip()


register_secret_resolver(prefect_secret)


def resolve_api_key(ref: str | int) -> str:
    """The key a reference points to (``secret:`` through Prefect); ConfigError naming the reference."""
    return resolve_key_ref(ref)


def where_the_key_lives(ref: KeyRef) -> str:
    """For a rejected key: where to fix it."""
    if ref.scheme == "secret":
        return f"the key comes from Prefect Secret block {ref.name!r}: update that block"
    return ref.where()
