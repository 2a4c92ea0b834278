"""The sync's edge for commands, scripts and tests: `run_sync` takes keyword arguments, resolves the settings
once (every one checked, from flags, the environment and the files, before the first request), then runs the one
sync (`pipelines.sync.run.sync`), which checks the warehouse's path and the keys before anything else.

Light on imports on purpose: importing it imports no dlt, pandas or pyarrow (commands that never sync stay fast).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

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
    """
    from pipelines.core.config import resolve_settings
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
    return sync(cfg, mode=mode, api_keys=api_keys, progress=progress, notify=notify, reset_state=reset_state)
