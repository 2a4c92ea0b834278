"""The settings of a sync: one object, declared the dlt way, resolved once at the edge and passed down.

`OutreachSettings` is a dlt ``@configspec`` in section ``[sources.outreach]``: dlt fills each field from
``SOURCES__OUTREACH__<NAME>`` environment variables, ``.dlt/config.toml`` and ``.dlt/secrets.toml``
(``OUTREACH__<NAME>`` also works; a bare ``<NAME>`` never does, so an unrelated ``API_KEY`` in the
environment is never picked up). The edges (CLI flags, flow parameters, ``python -m pipelines``) call
`resolve_settings` with what they were given explicitly, which wins over configuration; everything
below them takes the resolved object, so one run never mixes two readings of its configuration.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from dlt.common.configuration import configspec, resolve_configuration
from dlt.common.configuration.specs import BaseConfiguration
from dlt.common.typing import TSecretValue

from pipelines.core import constants
from pipelines.core.errors import ConfigError
from pipelines.core.setting_bounds import BOUNDS, check_bounds
from pipelines.core.setting_origin import unreadable

SECTIONS = ("sources",)
SECTION = "outreach"
DESTINATIONS = ("duckdb", "postgres")  # named in the contract; any other dlt destination name also works


@configspec
class OutreachSettings(BaseConfiguration):
    """Every setting of the sync. Holds API keys: never log, persist or repr it with them."""

    base_url: str | None = None
    """API base URL ending in /api/v1"""
    api_key: TSecretValue | None = None
    """one workspace's key"""
    api_keys: TSecretValue | None = None
    """several workspaces: a list (TOML), a JSON list or a comma-separated string"""
    rate_limit_per_minute: int = 120
    """per key; 0 turns pacing off"""
    reply_body_cap: int = 500
    """GET /replies/{id} calls per workspace per run; the rest are deferred"""
    reply_lookback_s: int = 3600
    """a quick sync re-reads replies this far below the stored cursor"""
    request_timeout: float = 20.0
    """seconds a request may wait for the service's next byte (connect: at most 10)"""
    stall_timeout_s: float = 120.0
    """seconds one response may take from request to last byte (checked as its body arrives): a server that
    trickles it is cut off"""
    sync_timeout_s: float = 21600.0
    """the overall deadline of a sync (0: none); past it the sync stops, keeping the batches loaded"""
    max_retry_after_s: float = 120.0
    """the longest `Retry-After` a sync waits; the service asking for longer fails the sync, naming the wait"""
    workers: int = 8
    """threads reading the API at once (shared by the workspaces of a batch)"""
    batch_size: int | None = None
    """workspaces extracted, normalized and loaded together (one dlt load per batch); default 25 in a full
    sync, 100 in a quick sync (`batch_size_for`)"""
    destination: str = "duckdb"
    """duckdb, postgres (credentials: DESTINATION__POSTGRES__CREDENTIALS), or another dlt destination"""
    duckdb_path: str = constants.DEFAULT_DUCKDB_PATH
    duckdb_storage_version: str = constants.DEFAULT_STORAGE_VERSION
    """storage format of a DuckDB warehouse we create (v1.0.0: DuckDB 1.0 and later can open it)"""
    duckdb_memory_limit: str = constants.DEFAULT_MEMORY_LIMIT
    """DuckDB spills to disk beyond this during loads. A load's merge work grows with the rows staged, so
    any limit above what a small load needs made the peak grow with rows (+270 MB at 1M recipients, 256MB)"""
    spool_dir: str | None = None
    """webhook spool, loaded first when it exists; default per warehouse (`spool_location`)"""
    pipelines_dir: str | None = None
    """dlt working directories (dlt's default: ~/.dlt/pipelines)"""
    lock_timeout_s: float = 600.0
    """how long a writer waits for the warehouse lock before failing"""

    __section__: ClassVar[str] = SECTION

    def __repr__(self) -> str:  # keys hidden
        return (
            f"OutreachSettings(base_url={self.base_url!r}, destination={self.destination!r}, "
            f"duckdb_path={self.duckdb_path!r}, workers={self.workers}, batch_size={self.batch_size})"
        )

    def batch_size_for(self, mode: str) -> int:
        """Workspaces per batch in a sync of `mode`: `batch_size` when set, else the mode's default."""
        if self.batch_size:
            return self.batch_size
        return constants.FULL_BATCH_SIZE if mode == "full" else constants.QUICK_BATCH_SIZE

    def api_key_list(self) -> list[str]:
        """The configured keys: `api_keys` when set, else `api_key` (one workspace each)."""
        return as_key_list(self.api_keys, "api_keys") or as_key_list(_one_key(self.api_key), "api_key")

    def spool_location(self) -> Path:
        """The webhook spool of this warehouse: `spool_dir` when set, else one per warehouse, so events spooled
        for one warehouse never load into another: ``<stem>_spool`` beside a DuckDB file
        (``data/outreach_spool`` for ``data/outreach.duckdb``), ``data/spool_<destination>`` for a server."""
        if self.spool_dir:
            return Path(self.spool_dir).expanduser()
        if (self.destination or "duckdb").strip().lower() == "duckdb":
            warehouse = Path(self.duckdb_path or constants.DEFAULT_DUCKDB_PATH).expanduser()
            return warehouse.with_name(f"{warehouse.stem}_spool")
        return Path(constants.DEFAULT_SPOOL_DIR).with_name(f"spool_{self.destination.strip().lower()}")

    def spool_path(self) -> Path | None:
        """The spool directory when it exists (nothing to load otherwise)."""
        path = self.spool_location()
        return path.resolve() if path.is_dir() else None


def resolve_settings(**explicit: Any) -> OutreachSettings:
    """The settings: `explicit` values (None means "not given") over dlt configuration over defaults.

    Raises ConfigError naming the setting when a value cannot be used.
    """
    given = {name: _plain(value) for name, value in explicit.items() if value is not None}
    unknown = set(given) - set(OutreachSettings().get_resolvable_fields())
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(sorted(unknown))}: see pipelines/README.md for the list")
    try:
        settings = resolve_configuration(OutreachSettings(), sections=SECTIONS, explicit_value=given or None)
    except Exception as exc:  # noqa: BLE001 - dlt's coercion errors name the field; keep one line
        raise ConfigError(unreadable(exc, (*SECTIONS, SECTION), "[sources.outreach]")) from None
    _validate(settings, given)
    return settings


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Path) else value


#: settings that name a path, and their flag: one of spaces only named a file or folder called that, beside the
#: command, and a warehouse path that names no file (`--duckdb ""` arrives as ".") named the current folder
PATH_SETTINGS = {"duckdb_path": "--duckdb", "spool_dir": "--spool", "pipelines_dir": "--pipelines-dir"}


def _validate(settings: OutreachSettings, given: Mapping[str, Any]) -> None:
    for name in PATH_SETTINGS:
        problem = path_problem(name, getattr(settings, name), given=name in given)
        if problem:
            raise ConfigError(problem)
    check_bounds({name: getattr(settings, name) for name in BOUNDS})
    _check_destination(settings.destination, given="destination" in given)
    _check_duckdb_settings(settings)
    settings.api_key_list()  # a malformed key list fails here, at the edge
    check_spool(settings.spool_location())


def path_problem(name: str, value: Any, *, given: bool) -> str | None:
    """Why the path setting `name` cannot be used, if it cannot: blank, or, for the warehouse, naming no file.
    `given`: passed by the command (its flag), else read from the settings. An empty value means unset."""
    text = "" if value is None else str(value)
    where = f"the given {name} ({PATH_SETTINGS[name]} {text!r})" if given else f"{SECTIONS[0]}.{SECTION}.{name}"
    if text and not text.strip():
        fix = "give a path, or leave it out" if given else "set it to a path, or unset it"
        return f"{where} is blank: {fix} for the default"
    if text and name == "duckdb_path" and not Path(text).name:
        return (
            f"{where} names a folder, not a DuckDB file: give the warehouse's file, such as "
            f"{constants.DEFAULT_DUCKDB_PATH}"
        )
    return None


def check_spool(spool: Path) -> None:
    """A spool path that is a file fails: read as "no spool yet", the events meant would never load."""
    if spool.exists() and not spool.is_dir():
        raise ConfigError(
            f"the webhook spool {spool} is a file, not a directory: set spool_dir (--spool) to the directory "
            "`outreach hooks listen` writes"
        )


#: setting -> (DuckDB's option, what it must be)
DUCKDB_OPTIONS = {
    "duckdb_memory_limit": ("memory_limit", "a size DuckDB takes, e.g. 64MB, 2GB or 50%"),
    "duckdb_storage_version": (
        "storage_compatibility_version",
        "a DuckDB storage version, e.g. v1.0.0 (the default: DuckDB 1.0 and later read it) or latest",
    ),
}


def _check_destination(name: str | None, *, given: bool) -> None:
    """A destination other than ours is any dlt has: a name dlt does not know failed after the first request, in
    dlt's words ("... was first attempted to be resolved as a named destination ...")."""
    wanted = (name or "").strip().lower()
    if wanted in ("", "duckdb", "postgres"):  # blank: unset, as everywhere the destination is read
        return
    from dlt.common.destination import Destination
    from dlt.common.destination.exceptions import UnknownDestinationModule

    try:
        Destination.from_reference(wanted)
    except UnknownDestinationModule:
        where = f"the given destination (--destination {name!r})" if given else "sources.outreach.destination"
        raise ConfigError(
            f"{where} is no destination dlt knows: set duckdb (the default) or postgres "
            "(DESTINATION__POSTGRES__CREDENTIALS), or another of dlt's destinations by its name"
        ) from None


def _check_duckdb_settings(settings: OutreachSettings) -> None:
    """The DuckDB settings as DuckDB itself takes them: a bad one fails here, naming the setting, not when the
    warehouse is opened with DuckDB's own words for its option."""
    for name, (option, expected) in DUCKDB_OPTIONS.items():
        value = getattr(settings, name)
        if not _duckdb_takes(option, value):
            raise ConfigError(f"sources.outreach.{name} is {value!r}, not {expected}")


@functools.cache
def _duckdb_takes(option: str, value: str) -> bool:
    """Whether DuckDB opens a database in memory with `option` set to `value`: some 30 ms each, and the settings
    are read several times a command, with the same values."""
    import duckdb

    try:
        duckdb.connect(":memory:", config={option: value}).close()
    except duckdb.Error:
        return False
    return True


def require_api(settings: OutreachSettings, keys: list[str]) -> None:
    """ConfigError naming the missing setting when there is no key or no base URL."""
    if not keys:
        raise ConfigError(
            "no API key: set SOURCES__OUTREACH__API_KEY (or __API_KEYS), [sources.outreach] api_key in "
            ".dlt/secrets.toml, or pass --api-key"
        )
    if not settings.base_url:
        raise ConfigError(
            "no API base URL: set SOURCES__OUTREACH__BASE_URL (ending in /api/v1), "
            "[sources.outreach] base_url in .dlt/config.toml, or pass --base-url"
        )


def _one_key(value: Any) -> Any:
    """`api_key` as given, unless it is a list: a key with a line break inside stays one (malformed) key,
    which the client then names, instead of two keys both rejected with 401."""
    if isinstance(value, str) and not value.strip().startswith("[") and "," not in value:
        return [value]
    return value


def as_key_list(value: Any, name: str = "api_keys") -> list[str]:
    """A configured keys value (list, JSON list, or comma/newline-separated string) as a list of keys."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise ConfigError(
                    f"SOURCES__OUTREACH__{name.upper()} is not a valid JSON list: fix its syntax"
                ) from None
        else:
            value = text.replace("\n", ",").split(",")
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"sources.outreach.{name} must be a list of keys (or a comma-separated string)")
    return [str(k).strip() for k in value if str(k).strip()]
