"""The sync's edge for commands, scripts and tests: `run_sync` takes keyword arguments, checks what was given,
resolves the settings once, then runs the one sync (`pipelines.sync.run.sync`).

Light on imports on purpose: a given warehouse path and given keys (with a URL) are checked before dlt is
imported (the settings, then the sync itself, import it: seconds on a busy machine), so a bad key or path
fails at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.api.accounts import Workspace, check_keys, raise_if_none_found
from pipelines.api.client import DEFAULT_RATE_LIMIT_PER_MINUTE, DEFAULT_TIMEOUT_S
from pipelines.core.constants import DEFAULT_DUCKDB_PATH
from pipelines.core.errors import OutreachError
from pipelines.core.setting_bounds import check_bounds
from pipelines.warehouse import lock
from pipelines.warehouse.load_dir import working_dir_problem

if TYPE_CHECKING:
    from pipelines.core.config import OutreachSettings
    from pipelines.core.report import SyncReport


def run_sync(
    *,
    mode: str = "quick",
    settings: OutreachSettings | None = None,
    api_keys: Sequence[str] | None = None,
    base_url: str | None = None,
    duckdb_path: str | Path | None = None,
    destination: str | None = None,
    spool_dir: str | Path | None = None,
    progress: bool = True,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    reply_lookback_s: int | None = None,
    request_timeout: float | None = None,
    workers: int | None = None,
    batch_size: int | None = None,
    pipelines_dir: str | Path | None = None,
    lock_timeout_s: float | None = None,
    notify: Callable[[str], None] | None = None,
    reset_state: bool = False,
) -> SyncReport:
    """The edge of `pipelines.sync.run.sync` for commands, scripts and tests: arguments left None come from dlt config
    (or `settings`, when given, which then must hold everything). `reset_state`: forget the dlt state of
    the warehouse's pipelines first (the data stays) and read everything again (a full sync).

    The given numbers, a given warehouse path and given keys (with a URL) are checked before the settings are resolved.
    """
    given = [k.strip() for k in (api_keys or []) if k and k.strip()]
    checked: list[Workspace | OutreachError] | None = None
    if settings is None:
        from pipelines.warehouse.diagnose import preflight_given

        check_bounds({
            "rate_limit_per_minute": rate_limit_per_minute, "request_timeout": request_timeout, "workers": workers,
            "batch_size": batch_size, "lock_timeout_s": lock_timeout_s,
        })  # fmt: skip
        if duckdb_path is not None and lock.current_holder(duckdb_path) is None:
            preflight_given(duckdb_path)
        suspect = working_dir_problem(Path(duckdb_path or DEFAULT_DUCKDB_PATH), pipelines_dir)
        if given and base_url and not suspect:
            # keys and URL given: check the keys before dlt (the settings) is even imported; a bad key: ~1 s.
            # A dlt working directory that dlt may not work in is settled first, by the sync with the settings.
            pace = DEFAULT_RATE_LIMIT_PER_MINUTE if rate_limit_per_minute is None else rate_limit_per_minute
            checked = check_keys(
                given, base_url, timeout=request_timeout or DEFAULT_TIMEOUT_S, rate_limit_per_minute=pace or None
            )
            raise_if_none_found(checked)
    from pipelines.core.config import resolve_settings  # imports dlt: after the checks above
    from pipelines.sync.run import sync

    cfg = settings or resolve_settings(
        base_url=base_url,
        duckdb_path=duckdb_path,
        destination=destination,
        spool_dir=spool_dir,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        reply_lookback_s=reply_lookback_s,
        request_timeout=request_timeout,
        workers=workers,
        batch_size=batch_size,
        pipelines_dir=pipelines_dir,
        lock_timeout_s=lock_timeout_s,
    )
    return sync(
        cfg, mode=mode, api_keys=given, progress=progress, notify=notify, checked=checked, reset_state=reset_state
    )
