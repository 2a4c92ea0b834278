"""Where the models build: the same warehouse the sync writes, from the same settings.

Settings are read the dlt way (`[sources.outreach]` in .dlt/config.toml or `SOURCES__OUTREACH__<NAME>`),
through `setting()` alone, so switching to the engine's settings object is a one-function change. The
resolved target is handed to dbt as the environment variables models/profiles.yml reads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.errors import ConfigError

DEFAULT_DUCKDB_PATH = Path("data/outreach.duckdb")
DEFAULT_STORAGE_VERSION = "v1.0.0"
DESTINATIONS = ("duckdb", "postgres")


def setting(name: str) -> Any:
    """`[sources.outreach] <name>` from dlt config (None when unset or unreadable).

    The environment variable dlt would read first (`SOURCES__OUTREACH__<NAME>`) is looked up without
    importing dlt, which costs a second of start-up to `outreach models`; the .dlt/ files through dlt.
    """
    value = os.environ.get(f"SOURCES__OUTREACH__{name.upper()}")
    if value is not None:
        return value
    import dlt

    try:
        return dlt.config.get(f"sources.outreach.{name}")
    except Exception:  # noqa: BLE001 - a malformed config.toml reads as unset; explicit checks follow
        return None


@dataclass(frozen=True)
class PostgresTarget:
    """PostgreSQL connection fields (holds the password: never log or repr it)."""

    host: str
    port: int
    username: str
    password: str = ""
    database: str = "postgres"

    def __repr__(self) -> str:
        return f"PostgresTarget({self.username}@{self.host}:{self.port}/{self.database})"

    @property
    def label(self) -> str:
        return f"postgresql://{self.username}@{self.host}:{self.port}/{self.database}"


@dataclass(frozen=True)
class WarehouseTarget:
    """One warehouse: a DuckDB file or a PostgreSQL database."""

    destination: str
    duckdb_path: Path | None = None
    postgres: PostgresTarget | None = None

    @property
    def label(self) -> str:
        if self.postgres is not None:
            return self.postgres.label
        return str(self.duckdb_path)

    @property
    def state_dir(self) -> Path:
        """dbt's target/ and logs/ for this warehouse (kept apart per warehouse for partial parsing)."""
        if self.duckdb_path is not None:
            return self.duckdb_path.parent / f".{self.duckdb_path.stem}_dbt"
        return DEFAULT_DUCKDB_PATH.resolve().parent / ".postgres_dbt"

    def dbt_env(self) -> dict[str, str]:
        """The environment variables models/profiles.yml reads for this target."""
        env = {"SOURCES__OUTREACH__DESTINATION": self.destination}
        if self.duckdb_path is not None:
            env["SOURCES__OUTREACH__DUCKDB_PATH"] = str(self.duckdb_path)
        if self.postgres is not None:
            env.update(
                {
                    "DESTINATION__POSTGRES__CREDENTIALS__HOST": self.postgres.host,
                    "DESTINATION__POSTGRES__CREDENTIALS__PORT": str(self.postgres.port),
                    "DESTINATION__POSTGRES__CREDENTIALS__USERNAME": self.postgres.username,
                    "DESTINATION__POSTGRES__CREDENTIALS__PASSWORD": self.postgres.password,
                    "DESTINATION__POSTGRES__CREDENTIALS__DATABASE": self.postgres.database,
                }
            )
        return env


def resolve_target(duckdb_path: str | Path | None = None, destination: str | None = None) -> WarehouseTarget:
    """The warehouse to build: explicit arguments first, then the sync's settings.

    `duckdb_path` implies DuckDB. Otherwise `[sources.outreach] destination` picks duckdb (default) or
    postgres; DuckDB's path is `[sources.outreach] duckdb_path` (default data/outreach.duckdb).
    """
    chosen = "duckdb" if duckdb_path is not None else str(destination or setting("destination") or "duckdb").lower()
    if chosen not in DESTINATIONS:
        raise ConfigError(
            f"unknown destination {chosen!r}: set SOURCES__OUTREACH__DESTINATION to duckdb or postgres"
        )
    if chosen == "postgres":
        return WarehouseTarget(destination="postgres", postgres=postgres_target())
    path = Path(duckdb_path or setting("duckdb_path") or DEFAULT_DUCKDB_PATH).expanduser().resolve()
    return WarehouseTarget(destination="duckdb", duckdb_path=path)


def postgres_target() -> PostgresTarget:
    """dlt's own PostgreSQL credentials (`DESTINATION__POSTGRES__CREDENTIALS` or .dlt/secrets.toml)."""
    from dlt.common.configuration import resolve_configuration
    from dlt.common.configuration.exceptions import ConfigurationException
    from dlt.destinations.impl.postgres.configuration import PostgresCredentials

    try:
        creds = resolve_configuration(PostgresCredentials(), sections=("destination", "postgres", "credentials"))
    except ConfigurationException as exc:
        raise ConfigError(
            "no PostgreSQL credentials: set DESTINATION__POSTGRES__CREDENTIALS=postgresql://user:password@host:5432/db "
            "or [destination.postgres] credentials in .dlt/secrets.toml"
        ) from exc
    return PostgresTarget(
        host=str(creds.host),
        port=int(creds.port or 5432),
        username=str(creds.username),
        password=str(creds.password or ""),
        database=str(creds.database),
    )


def storage_version() -> str:
    """`[sources.outreach] duckdb_storage_version` (default v1.0.0): the format the BI file is written in."""
    value = str(setting("duckdb_storage_version") or DEFAULT_STORAGE_VERSION)
    if not re.fullmatch(r"v\d+\.\d+\.\d+", value):
        raise ConfigError(
            f"duckdb_storage_version {value!r} is not a DuckDB storage version: use e.g. v1.0.0 "
            "(SOURCES__OUTREACH__DUCKDB_STORAGE_VERSION)"
        )
    return value


def bi_path_for(duckdb_path: str | Path) -> Path:
    """`<dir>/<stem>_bi.duckdb` beside the warehouse (the DESIGN.md contract)."""
    path = Path(duckdb_path)
    return path.with_name(f"{path.stem}_bi.duckdb")
