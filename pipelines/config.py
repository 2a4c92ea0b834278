"""Settings of a sync, resolved like dlt resolves them.

Explicit arguments win; otherwise ``[sources.outreach]`` in ``.dlt/config.toml``
and ``.dlt/secrets.toml``, or ``SOURCES__OUTREACH__<KEY>`` environment variables.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines import settings as S
from pipelines.client import DEFAULT_RATE_LIMIT_PER_MINUTE, DEFAULT_TIMEOUT_S
from pipelines.errors import ConfigError

SECTION = "sources.outreach"


@dataclass
class SyncConfig:
    """Resolved settings of one `run_sync` call (holds keys: never log or persist it)."""

    api_keys: list[str]
    base_url: str
    duckdb_path: Path
    spool_dir: Path | None
    rate_limit_per_minute: int | None
    reply_body_cap: int
    reply_lookback_s: int
    request_timeout: float
    workers: int
    pipelines_dir: str | None

    def __repr__(self) -> str:  # keys hidden
        return f"SyncConfig(base_url={self.base_url!r}, workspaces={len(self.api_keys)}, duckdb={self.duckdb_path})"


def _lookup(name: str, secret: bool = False) -> Any:
    import dlt

    accessor = dlt.secrets if secret else dlt.config
    try:
        return accessor.get(f"{SECTION}.{name}")
    except Exception:  # noqa: BLE001 - malformed toml etc.: treat as unset, explicit checks follow
        return None


def _as_key_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise ConfigError("SOURCES__OUTREACH__API_KEYS is not a valid JSON list: fix its syntax") from exc
        else:
            value = [part for part in text.replace("\n", ",").split(",")]
    if not isinstance(value, (list, tuple)):
        raise ConfigError("sources.outreach.api_keys must be a list of keys (or a comma-separated string)")
    return [str(k).strip() for k in value if str(k).strip()]


def _one_key(value: Any) -> Any:
    """`api_key` as given, unless it is a list: a key with a line break inside stays one (malformed) key,
    which the client then names, instead of two keys both rejected with 401."""
    if isinstance(value, str) and not value.strip().startswith("[") and "," not in value:
        return [value]
    return value


def _as_int(name: str, value: Any, default: int | None) -> int | None:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"sources.outreach.{name} must be an integer, got {value!r}") from exc


def resolve_config(
    *,
    api_keys: list[str] | None = None,
    base_url: str | None = None,
    duckdb_path: str | Path | None = None,
    spool_dir: str | Path | None = None,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    reply_lookback_s: int | None = None,
    request_timeout: float | None = None,
    workers: int | None = None,
    pipelines_dir: str | Path | None = None,
) -> SyncConfig:
    """Fill every unset argument from dlt config; raise ConfigError naming the missing setting."""
    keys = [k.strip() for k in (api_keys or []) if k and k.strip()]
    if not keys:
        keys = _as_key_list(_lookup("api_keys", secret=True)) or _as_key_list(
            _one_key(_lookup("api_key", secret=True))  # reliab: a line break inside one key is not a list
        )
    if not keys:
        raise ConfigError(
            "no API key: set SOURCES__OUTREACH__API_KEY (or __API_KEYS), [sources.outreach] api_key in "
            ".dlt/secrets.toml, or pass --api-key"
        )
    url = base_url or _lookup("base_url")
    if not url:
        raise ConfigError(
            "no API base URL: set SOURCES__OUTREACH__BASE_URL (ending in /api/v1), "
            "[sources.outreach] base_url in .dlt/config.toml, or pass --base-url"
        )
    rate = rate_limit_per_minute
    if rate is None:
        rate = _as_int("rate_limit_per_minute", _lookup("rate_limit_per_minute"), DEFAULT_RATE_LIMIT_PER_MINUTE)
    cap = reply_body_cap if reply_body_cap is not None else _as_int("reply_body_cap", _lookup("reply_body_cap"), S.DEFAULT_REPLY_BODY_CAP)
    lookback = reply_lookback_s if reply_lookback_s is not None else _as_int(
        "reply_lookback_s", _lookup("reply_lookback_s"), S.DEFAULT_REPLY_LOOKBACK_S
    )
    timeout = request_timeout if request_timeout is not None else float(_lookup("request_timeout") or DEFAULT_TIMEOUT_S)
    n_workers = workers if workers is not None else _as_int("workers", _lookup("workers"), S.DEFAULT_WORKERS)
    db = Path(duckdb_path or _lookup("duckdb_path") or S.DEFAULT_DUCKDB_PATH)
    spool = Path(spool_dir) if spool_dir else Path(_lookup("spool_dir") or S.DEFAULT_SPOOL_DIR)
    pdir = pipelines_dir or _lookup("pipelines_dir") or os.environ.get("DLT_DATA_DIR_PIPELINES")
    return SyncConfig(
        api_keys=keys,
        base_url=str(url),
        duckdb_path=db,
        spool_dir=spool if spool.is_dir() else None,
        rate_limit_per_minute=rate if rate and rate > 0 else None,
        reply_body_cap=int(cap or 0),
        reply_lookback_s=int(lookback or 0),
        request_timeout=timeout,
        workers=max(1, int(n_workers or 1)),
        pipelines_dir=str(pdir) if pdir else None,
    )
