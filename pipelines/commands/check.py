"""`outreach check`: where each setting came from, whether each key works, whether the warehouse can be
written (like `dbt debug`). One line per problem; keys are never printed, only masked.

Origins come from dlt's own config providers (`dlt.config.config_providers`, in lookup order: environment
variables, .dlt/secrets.toml, .dlt/config.toml), asked for ``[sources.outreach] <name>`` as the sync asks.

The key's level: the API has no endpoint that tells it. The check sends ``POST /hooks`` with an empty
body, which can create nothing: a key that may not change data is refused with 403 before the body is
read (read-only, or made by someone no longer an owner or admin); a read-and-write key gets 422 for the
missing fields. Any other answer is reported as "level unknown". A sync needs only read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.api.url_and_key import safe_url
from pipelines.core.errors import ConfigError, ForbiddenError, InvalidRequestError, OutreachError
from pipelines.core.setting_origin import origin

if TYPE_CHECKING:
    from pipelines.core.config import OutreachSettings
    from pipelines.warehouse.destination import Warehouse

SECTIONS = ("sources", "outreach")
SECRET_SETTINGS = ("api_key", "api_keys")


def _settings(resolved: OutreachSettings | None) -> tuple[tuple[str, bool, str], ...]:
    """(name, secret, default shown when unset) of every field of `pipelines.core.config.OutreachSettings`; the
    spool's default is the `resolved` warehouse's (another DuckDB file's, or a server's)."""
    from pipelines.core.config import OutreachSettings

    defaults = OutreachSettings()
    # settings that cannot be read tell no warehouse: the default one's spool would be a guess, and a wrong one
    spool = resolved.spool_location() if resolved is not None else "<stem>_spool beside a DuckDB file"
    # one per warehouse (pipelines.warehouse.destination.dlt_working_dir): beside a DuckDB file, or in dlt's default
    shown = {
        "pipelines_dir": "the warehouse's own (.<stem>_dlt beside a DuckDB file)",
        "spool_dir": f"the warehouse's ({spool})",
        "batch_size": f"{defaults.batch_size_for('full')} full, {defaults.batch_size_for('quick')} quick",
    }
    return tuple(
        (
            name,
            name in SECRET_SETTINGS,
            shown.get(name) or ("-" if getattr(defaults, name) is None else str(getattr(defaults, name))),
        )
        for name in defaults.get_resolvable_fields()
    )


FLAGS = {"base_url": "--base-url", "api_key": "--api-key", "duckdb_path": "--duckdb", "destination": "--destination"}


@dataclass
class CheckReport:
    """The lines `outreach check` prints and the problems among them (one line each)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        self.problems.append(text)
        self.lines.append(f"  problem: {text}")


def mask(key: str) -> str:
    """A key as it may be shown: its last 4 characters only (nothing of a short key)."""
    key = key.strip()
    return f"...{key[-4:]}" if len(key) >= 12 else "****"


def run_check(
    *,
    base_url: str | None = None,
    api_keys: Sequence[str] | None = None,
    duckdb_path: Path | None = None,
    destination: str | None = None,
    more: Sequence[tuple[str, Callable[[], list[str]]]] = (),
) -> CheckReport:
    """Settings and their origins, each key against the API, the warehouse. Makes two requests per key.
    `more`: checks of the layers above this one (the alerts' settings): a heading, and what returns its lines or
    raises OutreachError, its problem."""
    from pipelines.core.config import require_api, resolve_settings

    report = CheckReport()
    keys: list[str] = []
    settings = None
    problem = None
    try:
        cfg = resolve_settings(base_url=base_url, duckdb_path=duckdb_path, destination=destination)
        settings = cfg
        keys = [k.strip() for k in (api_keys or []) if k and k.strip()] or cfg.api_key_list()
        require_api(cfg, keys)
    except OutreachError as exc:
        cfg, problem = None, str(exc)
    report.lines.append("settings ([sources.outreach], where each value comes from):")
    flags = {
        "base_url": base_url,
        "api_key": list(api_keys) if api_keys else None,
        "duckdb_path": duckdb_path,
        "destination": destination,
    }
    for name, secret, default in _settings(settings):
        report.lines.append(_setting_line(name, secret, default, flags.get(name)))
    if problem is not None:
        report.lines.append("API:")
        report.problem(problem)
    if cfg is not None:
        report.lines.append(
            "API (GET /account; POST /hooks with an empty body tells the key's level, creates nothing):"
        )
        for index, key in enumerate(keys, start=1):
            _check_key(report, index, key, str(cfg.base_url), cfg.request_timeout)

    report.lines.append("warehouse:")
    _check_warehouse(report, duckdb_path, settings)
    if settings is not None:
        _check_dlt_state(report, settings)
    for heading, lines_of in more:
        report.lines.append(heading)
        try:
            report.lines.extend(f"  {line}" for line in lines_of())
        except OutreachError as exc:
            if str(exc) in report.problems:  # a settings file that does not parse fails every section's reading
                report.lines.append("  not checked: the problem above")
            else:
                report.problem(str(exc))
    report.lines.append(
        "all checks passed" if not report.problems else f"{len(report.problems)} problem(s): see the lines above"
    )
    return report


def _setting_line(name: str, secret: bool, default: str, flag: Any) -> str:
    if flag:
        value, where = flag, f"{FLAGS.get(name, name)} flag"
    else:
        value, where = origin(name, SECTIONS, secret=secret)
    if value is None and where:  # a settings file that could not be read: `where` says which and why
        shown = "?"
    elif value is None:
        shown, where = (default, "default") if default != "-" else ("(not set)", "")
    elif secret:
        shown = _masked_keys(value)  # never the key itself
    else:  # a URL without its user, password, query or fragment, which may carry tokens
        shown = safe_url(str(value)) if "://" in str(value) else str(value)
    return f"  {name:<24} {shown:<44} {where}".rstrip()


def _masked_keys(value: Any) -> str:
    from pipelines.core.config import as_key_list as _as_key_list

    try:
        keys = _as_key_list(value)
    except ConfigError:
        return "(not a valid list of keys)"
    return f"{len(keys)} key(s): " + ", ".join(mask(k) for k in keys) if len(keys) != 1 else mask(keys[0])


def _check_key(report: CheckReport, index: int, key: str, base_url: str, timeout: float) -> None:
    from pipelines.api.accounts import connectivity_check
    from pipelines.api.client import OutreachClient

    label = f"key #{index} {mask(key)}"
    try:
        with OutreachClient(key, base_url, rate_limit_per_minute=None, timeout=timeout) as client:
            account = connectivity_check(client)
            level = _key_level(client)
    except OutreachError as exc:
        report.problem(f"{label}: {exc}")
        return
    ws = account.get("workspace") or {}
    report.lines.append(f"  {label}: ok: workspace {ws.get('name')!r} ({ws.get('id')}), {level}")


def _key_level(client: Any) -> str:
    try:
        client.post("/hooks", {})
    except ForbiddenError:
        return "level: cannot change data (read-only, or made by a former admin): enough to sync, not to subscribe"
    except InvalidRequestError:
        return "level: read and write"
    except OutreachError:
        return "level unknown (the API has no way to tell it)"
    return "level unknown (POST /hooks with an empty body was accepted)"


def _check_warehouse(report: CheckReport, duckdb_path: Path | None, settings: OutreachSettings | None) -> None:
    from pipelines.core.config import path_problem
    from pipelines.core.constants import DEFAULT_STORAGE_VERSION
    from pipelines.warehouse.destination import warehouse_target
    from pipelines.warehouse.diagnose import configured_path, damage_problem, warehouse_problem
    from pipelines.warehouse.load_dir import working_dir_problem
    from pipelines.warehouse.storage_convert import storage_note

    target = None
    if settings is None:  # their problem is said above: the path a sync would be given, else the default
        if path_problem("duckdb_path", duckdb_path, given=True):
            report.lines.append("  not checked: its path is refused above")
            return
        path = configured_path(duckdb_path)
    else:
        try:  # `--duckdb` with another destination is a problem, as every command says, not one of them ignored
            target = warehouse_target(settings, duckdb_path=duckdb_path)
        except OutreachError as exc:
            report.problem(str(exc))
            return
        path = target.duckdb_path
    if path is None:
        _check_server(report, target)
        return
    pipelines_dir = settings.pipelines_dir if settings is not None else None
    problem = warehouse_problem(path) or damage_problem(path) or working_dir_problem(path, pipelines_dir)
    if problem:
        report.problem(problem)
        return
    version, _ = origin("duckdb_storage_version", SECTIONS, secret=False)
    note = storage_note(path, str(version or DEFAULT_STORAGE_VERSION))
    state = "exists" if path.exists() else "created at the first sync"
    report.lines.append(f"  {path}: ok, writable ({state})")
    if note:
        report.lines.append(f"  {note}")


def _check_server(report: CheckReport, target: Warehouse | None) -> None:
    """A PostgreSQL warehouse (`target`, else the configured one): connected to, and either holding the raw schema
    or letting this user create it."""
    from pipelines.core.constants import DATASET_NAME
    from pipelines.warehouse.destination import warehouse_target

    try:
        target = target or warehouse_target()
        if not target.is_postgres:
            report.lines.append(f"  {target.label}: `outreach check` tests DuckDB and PostgreSQL warehouses only")
            return
        con = target.connect()
    except OutreachError as exc:
        report.problem(str(exc))
        return
    try:
        with con.cursor() as cur:
            cur.execute(
                "select current_setting('server_version'), current_user, current_database(), "
                "has_database_privilege(current_database(), 'CREATE'), "
                "exists (select 1 from information_schema.schemata where schema_name = %s)",
                [DATASET_NAME],
            )
            version, user, database, may_create, has_raw = cur.fetchone()
    finally:
        con.close()
    if not has_raw and not may_create:
        report.problem(
            f"{target.label}: user {user} may not create the `{DATASET_NAME}` schema the first sync writes: run "
            f'`GRANT CREATE ON DATABASE "{database}" TO "{user}"` as its owner, or create the schema for this user'
        )
        return
    state = (
        f"the `{DATASET_NAME}` schema exists"
        if has_raw
        else f"the `{DATASET_NAME}` schema is created at the first sync"
    )
    report.lines.append(f"  {target.label}: ok, connected (PostgreSQL {version}; {state})")


def _check_dlt_state(report: CheckReport, settings: OutreachSettings) -> None:
    from pipelines.warehouse.destination import dlt_working_dir, warehouse_target
    from pipelines.warehouse.reset import damaged_states

    try:
        root = dlt_working_dir(warehouse_target(settings), settings.pipelines_dir, claim=False)
    except OutreachError:
        return  # no warehouse to name it by (credentials missing or unreadable): said under "warehouse:"
    damaged = damaged_states(root)
    for line in damaged:
        report.problem(line)
    if not root.is_dir():
        report.lines.append(f"  dlt state in {root}: none yet (the first sync creates it)")
    elif not damaged:
        report.lines.append(f"  dlt state in {root}: ok")
