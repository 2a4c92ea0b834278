"""Run: one sync of every configured workspace, the way `outreach sync`, ``python -m pipelines``, the demo and
the Prefect flows all do it (`sync`, which takes the settings the edge resolved once).

1. the edge (`pipelines.sync.edge`) resolves the settings once (`pipelines.core.config`); `sync` names the warehouse
   (`pipelines.warehouse.destination`);
2. take the warehouse lock for the run (`pipelines.warehouse.lock`: a second sync waits, saying for whom, then
   fails in one line), check the warehouse can be written, load the webhook spool;
3. check every key (GET /account) before anything else is spent;
4. sort the workspaces into batches of `batch_size` and run them, two at a time: one batch extracts
   (API reads on `workers` threads) while the previous one loads. Each batch is one dlt load.

A workspace that fails does not stop the others; the first error is raised once all have finished.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.api.accounts import Workspace, check_keys, numbered, one_per_workspace, raise_if_none_found
from pipelines.core import constants
from pipelines.core.config import OutreachSettings, require_api
from pipelines.core.deadline import Deadline, interrupted, interruption, stop_on_signals
from pipelines.core.errors import ConfigError, OutreachError
from pipelines.core.progress import ProgressDisplay, SyncProgress, WorkspaceProgress
from pipelines.core.report import SyncReport, WorkspaceReport
from pipelines.source.quarantine import RejectedRecordsError, summary_line
from pipelines.sync import claims
from pipelines.sync.batches import run_batches
from pipelines.warehouse import demo_guard, lock
from pipelines.warehouse.destination import dlt_working_dir, warehouse_target
from pipelines.warehouse.kept_open import kept_open
from pipelines.warehouse.load_dir import working_dir_problem
from pipelines.warehouse.runs import flush_failed_runs, run_row
from pipelines.warehouse.warehouse_prep import load_spool_events, prepare_warehouse

log = logging.getLogger(__name__)

Notify = Callable[[str], None]


@stop_on_signals()
def sync(
    settings: OutreachSettings,
    *,
    mode: str = "quick",
    api_keys: Sequence[str] | None = None,
    progress: bool = False,
    notify: Notify | None = None,
    reset_state: bool = False,
) -> SyncReport:
    """The one sync: `outreach sync`, ``python -m pipelines``, the demo and every Prefect flow run it.

    Every guard is here, applied once: the warehouse preflight, the warehouse lock, the key check and the
    demo-warehouse guard. `api_keys` default to the configured ones. A workspace that fails does not stop
    the others; the first error is raised once all have finished. `reset_state`: forget the dlt state of the
    warehouse's pipelines first (the data stays) and read everything again (a full sync). SIGINT and SIGTERM
    stop it at a load boundary (`pipelines.signals`).
    """
    mode = "full" if reset_state else mode
    if mode not in constants.MODES:
        raise ConfigError(f"unknown mode {mode!r}: use one of {', '.join(constants.MODES)}")
    from pipelines.warehouse.diagnose import preflight_given

    cfg = settings
    warehouse = warehouse_target(cfg)
    if warehouse.duckdb_path is not None and lock.current_holder(warehouse.duckdb_path) is None:
        # checked before any request; a file another sync holds is not a problem but a wait: the lock
        # below says for whom, and the check runs again once it is ours
        preflight_given(warehouse.duckdb_path)
    problem = working_dir_problem(warehouse.duckdb_path, cfg.pipelines_dir)
    if problem:
        raise ConfigError(problem)
    if warehouse.is_postgres:
        warehouse.postgres_credentials()  # read, not connected: a URL that cannot be read fails before any request
    given = [k.strip() for k in (api_keys or []) if k and k.strip()]
    keys = given or cfg.api_key_list()
    require_api(cfg, keys)
    deadline = Deadline(cfg.sync_timeout_s)
    # keys given: a bad key fails before the warehouse is created or waited for
    checked = _accounts(given, cfg) if given else None
    started = time.monotonic()
    report = SyncReport(mode=mode, destination=warehouse.label)
    with lock.hold(warehouse, "sync", shared=True, timeout_s=cfg.lock_timeout_s, notify=notify):
        _check_dlt_state(dlt_working_dir(warehouse, cfg.pipelines_dir), reset_state, notify)
        prepare_warehouse(warehouse)
        if checked is None:
            checked = _accounts(keys, cfg)
        failures = [(i, r) for i, r in enumerate(checked) if isinstance(r, OutreachError)]
        found, left_out = one_per_workspace([r for r in checked if isinstance(r, Workspace)])
        found, taken_elsewhere = claims.take(found)
        for line in [*left_out, *taken_elsewhere]:
            (notify or log.warning)(line)
        demo_guard.refuse_foreign_workspaces(warehouse.duckdb_path, [w.account for w in found])
        preload_libraries()
        trackers = {ws.index: WorkspaceProgress(label=f"key #{ws.index + 1}") for ws in found}
        run_id = new_run_id()
        key_records = [_key_failure_record(run_id, mode, i, exc) for i, exc in failures]
        with (
            kept_open(warehouse, cfg.pipelines_dir),
            ProgressDisplay(SyncProgress(list(trackers.values())), enabled=progress),
        ):
            with lock.access(warehouse):
                flush_failed_runs(warehouse, cfg.pipelines_dir)
                report.events_loaded = load_spool_events(cfg, warehouse)
            reports = run_batches(
                found,
                mode=mode,
                settings=cfg,
                warehouse=warehouse,
                run_id=run_id,
                progress_for=lambda ws: trackers[ws.index],
                key_failures=key_records,
                deadline=deadline,
            )
    report.workspaces = [r for r, _ in reports if r is not None]
    report.seconds = round(time.monotonic() - started, 3)
    errors = sorted([*failures, *((ws.index, exc) for ws, exc in _errors(reports))], key=lambda e: e[0])
    if interrupted():
        stopped = interruption(interrupted())
        stopped.report = report  # what did load, for the summary printed before the line
        raise stopped
    if errors:
        index, exc = errors[0]
        raise numbered(exc, index, len(keys))
    rejected = report.rejected()
    if rejected:
        names = ", ".join(sorted({ws.workspace_name for ws in report.workspaces if ws.rejected}))
        error = RejectedRecordsError(summary_line(rejected, f"workspace {names}"))
        error.report = report  # what was loaded, for a caller that shows the summary too
        raise error
    return report


def _accounts(keys: Sequence[str], cfg: OutreachSettings) -> list[Workspace | OutreachError]:
    """Each key's ``GET /account`` answer, in key order (`check_keys`); the first error when every key failed."""
    checked = check_keys(
        keys,
        str(cfg.base_url),
        timeout=cfg.request_timeout,
        workers=cfg.workers,
        rate_limit_per_minute=cfg.rate_limit_per_minute or None,
    )
    raise_if_none_found(checked)
    return checked


def _check_dlt_state(root: Path, reset: bool, notify: Notify | None) -> None:
    """Forget the pipelines' dlt state when asked; else fail in one line on a damaged state file (dlt would
    fail on it with a decoding error naming neither the file nor the fix). The caller holds the lock."""
    from pipelines.warehouse.reset import DamagedStateError, damaged_states, forget_state

    if reset:
        removed = forget_state(root)
        (notify or log.warning)(
            f"forgot the dlt state of {len(removed)} pipeline(s) in {root}; the "
            "warehouse's data is kept and this full sync reads the API again"
        )
        return
    damaged = damaged_states(root)
    if damaged:
        raise DamagedStateError(damaged[0])


def new_run_id() -> str:
    """A run's id: sortable by start time to the second (runs within one second tie), unique across machines."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + uuid.uuid4().hex[:8]


def _errors(
    reports: Sequence[tuple[WorkspaceReport, tuple[Workspace, BaseException | None]]],
) -> list[tuple[Workspace, BaseException]]:
    return [(ws, err) for _, (ws, err) in reports if err is not None]


def _key_failure_record(run_id: str, mode: str, index: int, exc: OutreachError) -> dict[str, Any]:
    """The run record of a key that named no workspace (rejected at GET /account)."""
    now = datetime.now(UTC)
    return run_row(
        run_id=run_id,
        workspace_id=None,
        workspace_name=f"key #{index + 1}",
        mode=mode,
        started_at=now,
        outcome="failed",
        rows_loaded={},
        requests=1,
        error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
    )


def preload_libraries() -> None:
    """Import what dlt imports lazily, once, before worker threads race on it (pandas is not thread-safe
    to import concurrently: "partially initialized module" errors)."""
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    from dlt.common.libs import pyarrow as _dlt_pyarrow  # noqa: F401

    try:
        from dlt.common.libs import pandas as _dlt_pandas  # noqa: F401
    except ImportError:  # pragma: no cover
        pass
