"""Where the models build: the same warehouse the sync writes, from the same settings.

The warehouse is the sync's own answer, `pipelines.warehouse.destination.warehouse_target` over the settings object
(`pipelines.core.config`: `[sources.outreach]` in .dlt/config.toml or `SOURCES__OUTREACH__<NAME>`); this module
adds what dbt needs. The resolved target is handed to dbt as the environment variables models/profiles.yml reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.errors import ConfigError, WarehouseError
from pipelines.core import constants
from pipelines.core.constants import bi_path_for as bi_path_for  # re-exported: the models' name for it
from pipelines.core.errors import postgres_unreachable

if TYPE_CHECKING:
    from psycopg2.extensions import connection

    from pipelines.warehouse.destination import Warehouse

DEFAULT_DUCKDB_PATH = Path(constants.DEFAULT_DUCKDB_PATH)
DESTINATIONS = ("duckdb", "postgres")  # the destinations dbt builds on (adapters installed)


@dataclass(frozen=True)
class PostgresTarget:
    """A PostgreSQL warehouse's connection fields, as dbt's profile and psycopg2 take them (holds the password:
    never log or repr it)."""

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

    def connect(self) -> connection:
        """A psycopg2 connection; one that fails is a one-line WarehouseError naming the fix."""
        import psycopg2

        try:
            return psycopg2.connect(
                host=self.host, port=self.port, user=self.username, password=self.password, dbname=self.database,
                connect_timeout=10,
            )  # fmt: skip
        except psycopg2.Error as exc:
            raise WarehouseError(postgres_unreachable(self.label, exc)) from exc


def dbt_state_dir(warehouse: Warehouse) -> Path:
    """dbt's target/ and logs/ for this warehouse (kept apart per warehouse for partial parsing)."""
    if warehouse.duckdb_path is not None:
        return duckdb_state_dir(warehouse.duckdb_path)
    return DEFAULT_DUCKDB_PATH.resolve().parent / ".postgres_dbt"


def duckdb_state_dir(duckdb_path: Path) -> Path:
    """The builds' own files for the DuckDB warehouse at `duckdb_path` (dbt's, and the BI publish's record)."""
    return duckdb_path.parent / f".{duckdb_path.stem}_dbt"


def dbt_env(warehouse: Warehouse) -> dict[str, str]:
    """The environment variables models/profiles.yml reads for this warehouse."""
    env = {"SOURCES__OUTREACH__DESTINATION": warehouse.destination}
    if warehouse.duckdb_path is not None:
        env["SOURCES__OUTREACH__DUCKDB_PATH"] = str(warehouse.duckdb_path)
    if warehouse.is_postgres:
        pg = postgres_target(warehouse)
        env.update(
            {
                "DESTINATION__POSTGRES__CREDENTIALS__HOST": pg.host,
                "DESTINATION__POSTGRES__CREDENTIALS__PORT": str(pg.port),
                "DESTINATION__POSTGRES__CREDENTIALS__USERNAME": pg.username,
                "DESTINATION__POSTGRES__CREDENTIALS__PASSWORD": pg.password,
                "DESTINATION__POSTGRES__CREDENTIALS__DATABASE": pg.database,
            }
        )
    return env


def resolve_target(duckdb_path: str | Path | None = None, destination: str | None = None) -> Warehouse:
    """The warehouse to build: explicit arguments first, then the sync's settings.

    `duckdb_path` implies DuckDB. Otherwise `[sources.outreach] destination` picks duckdb (default) or
    postgres; DuckDB's path is `[sources.outreach] duckdb_path` (default data/outreach.duckdb). The answer is
    the sync's (`pipelines.warehouse.destination.warehouse_target`), so both always name the same warehouse.
    """
    from pipelines.core.errors import ConfigError as SettingsError
    from pipelines.warehouse.destination import warehouse_target

    try:
        warehouse = warehouse_target(
            duckdb_path=duckdb_path, destination="duckdb" if duckdb_path is not None else destination
        )
    except SettingsError as exc:
        raise ConfigError(str(exc)) from exc
    chosen = warehouse.destination
    if chosen not in DESTINATIONS:
        raise ConfigError(f"unknown destination {chosen!r}: set SOURCES__OUTREACH__DESTINATION to duckdb or postgres")
    if chosen == "postgres":
        postgres_target(warehouse)  # credentials checked now, in one line, before dbt starts
    return warehouse


def postgres_target(warehouse: Warehouse) -> PostgresTarget:
    """dlt's own PostgreSQL credentials (`DESTINATION__POSTGRES__CREDENTIALS` or .dlt/secrets.toml), as the sync
    reads them."""
    from pipelines.core.errors import ConfigError as SettingsError

    try:
        creds = warehouse.postgres_credentials()
    except SettingsError as exc:
        raise ConfigError(str(exc)) from exc
    return PostgresTarget(
        host=str(creds.host),
        port=int(creds.port or 5432),
        username=str(creds.username),
        password=str(creds.password or ""),
        database=str(creds.database),
    )


def storage_version() -> str:
    """`[sources.outreach] duckdb_storage_version` (default v1.0.0): the format the BI file is written in."""
    from pipelines.core.config import resolve_settings
    from pipelines.core.errors import ConfigError as SettingsError

    try:  # checked as DuckDB takes it when the settings are read
        return str(resolve_settings().duckdb_storage_version or constants.DEFAULT_STORAGE_VERSION)
    except SettingsError as exc:
        raise ConfigError(str(exc)) from exc


#: Vars `outreach models` sets itself (models/build.py): a value given with --vars would be overridden, unsaid.
BUILD_VARS = frozenset({"atomic_build", "build_fingerprint"})


def parse_dbt_vars(text: str, project_dir: Path) -> dict[str, Any]:
    """`outreach models --vars`: a JSON object of the project's vars (dbt_project.yml), checked before any build:
    dbt itself would ignore a misspelt name."""
    import json

    import yaml

    example = '\'{"extra_reply_classes": {"out_of_office_v2": "auto_reply"}}\''
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"--vars is not JSON ({exc.msg} at character {exc.pos}): pass an object, e.g. {example}"
        ) from None
    if not isinstance(value, dict):
        raise ConfigError(f"--vars must be a JSON object of vars, e.g. {example}")
    known = yaml.safe_load((project_dir / "dbt_project.yml").read_text(encoding="utf-8")).get("vars") or {}
    settable = ", ".join(sorted(set(known) - BUILD_VARS))
    own = sorted(set(value) & BUILD_VARS)
    if own:
        verb = "is" if len(own) == 1 else "are"
        raise ConfigError(f"--vars: {', '.join(own)} {verb} set by the build itself; the vars to set are {settable}")
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise ConfigError(
            f"--vars: no var named {', '.join(unknown)} in {project_dir / 'dbt_project.yml'}; "
            f"the vars to set are {settable}"
        )
    for name, given in value.items():
        # the project's value says what the models take: a string where a list is read would be read letter by
        # letter (free_mail_domains: "gmail.com" flagged none of its addresses)
        default, of_strings = known[name], isinstance(known[name], list) and bool(known[name])
        if default is not None and (
            _kind(given) != _kind(default) or (of_strings and not all(isinstance(item, str) for item in given))
        ):
            wanted = _kind(default) + (" of strings" if of_strings else "")
            raise ConfigError(f"--vars: {name} must be {wanted}, as in {project_dir / 'dbt_project.yml'}")
    return value


def _kind(value: Any) -> str:
    """A JSON value's kind, in words (a bool before a number: Python's bool is an int)."""
    for kind, name in ((bool, "true or false"), ((int, float), "a number"), (str, "a string"), (list, "a list"),
                       (dict, "an object")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return "null"
