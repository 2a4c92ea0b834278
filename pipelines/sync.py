"""One sync of every configured workspace: `run_sync`, and the blocks it is made of.

Blocks (the Prefect flows use them too):

* `extract_workspace(api_key, ...) -> Extracted`: checks the key (GET /account),
  plans the run (mode, changed campaigns, reply cursor, bodies), extracts and
  normalizes into the workspace's own dlt pipeline ``outreach_<workspace_id>``.
  It writes nothing to the destination (it reads it briefly, under `warehouse_lock`).
* `load_workspace(extracted) -> WorkspaceReport`: loads every pending package of
  that pipeline; after a full sync, marks rows the API stopped returning. The
  caller serialises loads into one DuckDB file.
* `load_spool_events(...)`: loads the webhook spool (issue 6) before the API is read.

`run_sync` runs the workspaces on threads with one load lock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ContextManager

from pipelines import demo_guard
from pipelines import settings as S
from pipelines.client import OutreachClient, connectivity_check
from pipelines.config import SyncConfig, resolve_config
from pipelines.errors import ConfigError, NotFoundError, OutreachError
from pipelines.fanout import fan_out
from pipelines.progress import ProgressDisplay, WorkspaceProgress
from pipelines.recipient_pages import PageGuide
from pipelines.report import SyncReport, WorkspaceReport

log = logging.getLogger(__name__)


class _HandledDltWarnings(logging.Filter):
    """Drop two dlt warnings about situations this package handles on purpose."""

    HANDLED = (
        "is identical to the dataset name",  # three-part names: see pipelines/duckdb_destination.py
        "when merging arrow schema with dlt schema",  # recipients' explicit arrow types vs column hints
    )

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(text in message for text in self.HANDLED)


logging.getLogger("dlt").addFilter(_HandledDltWarnings())

__all__ = [
    "Extracted",
    "SyncReport",
    "WorkspaceReport",
    "extract_workspace",
    "load_workspace",
    "load_spool_events",
    "make_pipeline",
    "run_sync",
]


@dataclass
class Extracted:
    """The result of `extract_workspace`: a pipeline with normalized packages waiting to load."""

    pipeline: Any  # dlt.Pipeline
    report: WorkspaceReport
    synced_at: datetime
    progress: WorkspaceProgress = field(repr=False)


def _nullcontext() -> ContextManager[None]:
    return contextlib.nullcontext()


def pipeline_name_for(workspace_id: str) -> str:
    """dlt pipeline name of a workspace: ``outreach_<workspace id with _ for ->``."""
    return S.PIPELINE_PREFIX + "".join(c if c.isalnum() else "_" for c in workspace_id)


def make_destination(duckdb_path: str | Path | None, staging_suffix: str = "") -> Any:
    """DuckDB at `duckdb_path` (default data/outreach.duckdb), unless `[sources.outreach] destination`
    names another dlt destination (configured the dlt way).

    DuckDB uses three-part names (`pipelines.duckdb_destination`), so a file named like the dataset
    (outreach.duckdb) is not ambiguous. Each pipeline gets its own staging dataset
    (``outreach_staging_<suffix>``): workspaces share the dataset but must not share staging tables,
    or a load resumed after a crash would merge another workspace's staged rows.
    """
    layout = f"%s_staging_{staging_suffix}" if staging_suffix else "%s_staging"
    configured = _configured_destination()
    if configured:
        from dlt.common.destination import Destination

        return Destination.from_reference(configured, staging_dataset_name_layout=layout)
    from pipelines.duckdb_destination import outreach_duckdb

    # absolute: dlt would otherwise resolve a relative path against an existing working dir's last one
    path = Path(duckdb_path or S.DEFAULT_DUCKDB_PATH).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    credentials = {"database": str(path), "global_config": duckdb_memory_config()}
    return outreach_duckdb(credentials=credentials, staging_dataset_name_layout=layout)


def _configured_destination() -> str | None:
    """The `[sources.outreach] destination` name when it is not DuckDB (None means DuckDB)."""
    import dlt

    configured = dlt.config.get("sources.outreach.destination")
    return str(configured) if configured and str(configured) != "duckdb" else None


def _destination_label(duckdb_path: Path) -> str:
    """What the summary says the sync wrote to."""
    return _configured_destination() or str(duckdb_path)


def duckdb_memory_config() -> dict[str, Any]:
    """Bound DuckDB's memory during loads (its default is 80% of RAM); it spills to disk instead.
    Override with [sources.outreach] duckdb_memory_limit."""
    import dlt

    limit = dlt.config.get("sources.outreach.duckdb_memory_limit") or S.DEFAULT_DUCKDB_MEMORY_LIMIT
    return {"memory_limit": str(limit), "preserve_insertion_order": False}


def _bounded_files() -> None:
    """Rotate extract/normalize files every 100,000 rows (unless configured): normalize and load then
    handle one bounded file at a time instead of a whole workspace's recipients at once.
    dlt reads the extract writer's settings from [sources.data_writer] (not [extract.data_writer])."""
    import os

    for stage in ("SOURCES", "NORMALIZE"):
        os.environ.setdefault(f"{stage}__DATA_WRITER__FILE_MAX_ITEMS", str(S.FILE_MAX_ROWS))


def make_pipeline(name: str, duckdb_path: str | Path | None, pipelines_dir: str | None) -> Any:
    """The dlt pipeline of one workspace (or of the events), writing to dataset `outreach`."""
    import dlt

    _bounded_files()
    return dlt.pipeline(
        pipeline_name=name,
        destination=make_destination(duckdb_path, name.removeprefix(S.PIPELINE_PREFIX)),
        dataset_name=S.DATASET_NAME,
        pipelines_dir=pipelines_dir,
    )


def unwrap_error(exc: BaseException) -> BaseException:
    """Find our OutreachError inside dlt's PipelineStepFailed/ResourceExtractionError wrappers."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OutreachError):
            return current
        seen.add(id(current))
        nxt = getattr(current, "exception", None)
        current = nxt if isinstance(nxt, BaseException) else (current.__cause__ or current.__context__)
    return exc


def _read_state(pipeline: Any) -> dict[str, Any]:
    state = pipeline.state.get("sources", {}).get(S.SOURCE_NAME, {})
    return dict(state) if isinstance(state, dict) else {}


def _read_campaigns(client: OutreachClient, progress: WorkspaceProgress) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for page in client.iter_pages("/campaigns", per_page=S.PER_PAGE_CAMPAIGNS):
        progress.page("campaigns")
        rows.extend(item for item in page.items if isinstance(item, dict))
    seen: set[Any] = set()
    unique = []
    for row in rows:  # a campaign created while paging shifts pages: drop repeats
        if row.get("id") not in seen:
            seen.add(row.get("id"))
            unique.append(row)
    return unique


def _read_stats(
    client: OutreachClient, campaign_ids: list[str], workers: int, progress: WorkspaceProgress
) -> dict[str, Any]:
    """GET /campaigns/{id}/stats of each campaign, in parallel (a quick sync needs them to plan its page reads)."""

    def task_for(campaign_id: str) -> Any:
        def run(emit: Any) -> None:
            try:
                data = client.get_data(f"/campaigns/{campaign_id}/stats")
            except NotFoundError:
                log.warning("campaign %s disappeared before its stats were read; skipped", campaign_id)
                return
            progress.page("campaign_stats")
            if isinstance(data, dict):
                emit((campaign_id, data))

        return run

    return dict(fan_out([task_for(cid) for cid in campaign_ids], workers=workers))


def _page_guides(
    pipeline: Any, lock: Any, workspace_id: str, mode: str, changed: list[str], stats: dict[str, Any]
) -> dict[str, PageGuide]:
    """Which recipient pages to read per changed campaign: all of them in a full sync; in a quick sync,
    those that explain the change in its stats (pipelines.recipient_pages)."""
    if mode == "full":
        return {cid: PageGuide(S.PER_PAGE_RECIPIENTS) for cid in changed}
    from pipelines.warehouse import read_stored_pages

    with lock:
        stored = read_stored_pages(pipeline, workspace_id, changed, S.PER_PAGE_RECIPIENTS)
    return {cid: PageGuide(S.PER_PAGE_RECIPIENTS, stored.get(cid), stats.get(cid)) for cid in changed}


def _default_body_lookup(pipeline: Any, spool_dir: Path | None, lock: ContextManager[Any] | Any) -> Any:
    """Reply bodies from lead.replied webhook events (pipelines.events, issue 6), if available."""
    try:
        from pipelines.events import bodies_from_events
    except ImportError:
        log.debug("pipelines.events not available: reply bodies come from the API only")
        return None

    def lookup(replies: Any) -> Any:
        with lock if lock is not None else _nullcontext():
            return bodies_from_events(replies, pipeline=pipeline, spool_dir=spool_dir)

    return lookup


def extract_workspace(
    api_key: str,
    *,
    mode: str = "quick",
    base_url: str | None = None,
    duckdb_path: str | Path | None = None,
    pipelines_dir: str | None = None,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    reply_lookback_s: int | None = None,
    request_timeout: float | None = None,
    workers: int | None = None,
    spool_dir: str | Path | None = None,
    body_lookup: Any = "auto",
    warehouse_lock: Any = None,
    progress: WorkspaceProgress | None = None,
    config: SyncConfig | None = None,
    account: dict[str, Any] | None = None,
) -> Extracted:
    """Extract + normalize one workspace (no destination writes). Raises OutreachError subclasses.

    `body_lookup`: "auto" (bodies from webhook events when pipelines.events exists),
    None (API only) or a `pipelines.source.BodyLookup` callable. `warehouse_lock`:
    a lock held while the destination is read (pass the same lock your loads hold).
    """
    if mode not in S.MODES:
        raise ConfigError(f"unknown mode {mode!r}: use one of {', '.join(S.MODES)}")
    cfg = config or resolve_config(
        api_keys=[api_key],
        base_url=base_url,
        duckdb_path=duckdb_path,
        spool_dir=spool_dir,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        reply_lookback_s=reply_lookback_s,
        request_timeout=request_timeout,
        workers=workers,
        pipelines_dir=pipelines_dir,
    )
    _preload_libraries()
    progress = progress or WorkspaceProgress(label="workspace")
    lock = warehouse_lock if warehouse_lock is not None else _nullcontext()
    client = OutreachClient(
        api_key, cfg.base_url, rate_limit_per_minute=cfg.rate_limit_per_minute, timeout=cfg.request_timeout
    )
    progress.stats_source = client.stats.snapshot
    progress.paging_source = client.paging_progress  # reliab: pages read/known for the ETA
    started = time.monotonic()
    try:
        progress.set_stage("account")
        if account is None:
            account = connectivity_check(client)
        workspace = account["workspace"]
        workspace_id = str(workspace.get("id"))
        progress.label = str(workspace.get("name") or workspace_id)
        pipeline = make_pipeline(pipeline_name_for(workspace_id), cfg.duckdb_path, cfg.pipelines_dir)
        with lock:
            _sync_destination(pipeline)
            known, deferred = _read_bodies(pipeline, workspace_id)
        state = _read_state(pipeline)
        progress.set_stage("campaigns")
        campaigns = _read_campaigns(client, progress)
        from pipelines.shaping import campaign_fingerprint

        old_fps: dict[str, str] = dict(state.get("fingerprints") or {})
        new_fps = {str(c["id"]): campaign_fingerprint(c) for c in campaigns if c.get("id")}
        changed = [cid for cid, fp in new_fps.items() if mode == "full" or old_fps.get(cid) != fp]
        from pipelines.progress import expected_recipient_pages  # reliab: the ETA knows the pages to come

        progress.expect(expected_recipient_pages(campaigns, changed, mode, S.PER_PAGE_RECIPIENTS))
        synced_at = datetime.now(timezone.utc)
        from pipelines.source import WorkspacePlan, outreach_source

        progress.set_stage("stats")
        stats = _read_stats(client, changed, cfg.workers, progress)
        guides = _page_guides(pipeline, lock, workspace_id, mode, changed, stats)

        lookup = _default_body_lookup(pipeline, cfg.spool_dir, warehouse_lock) if body_lookup == "auto" else body_lookup
        plan = WorkspacePlan(
            mode=mode,
            workspace_id=workspace_id,
            account=account,
            campaigns=campaigns,
            changed_campaign_ids=changed,
            fingerprints=new_fps,
            reply_cursor=state.get("reply_cursor"),
            reply_lookback_s=cfg.reply_lookback_s,
            reply_body_cap=cfg.reply_body_cap,
            known_bodies=known,
            deferred_reply_ids=deferred,
            read_event_types=mode == "full" or not state.get("event_types_loaded"),
            synced_at=synced_at,
            workers=cfg.workers,
            body_lookup=lookup,
            stats=stats,
            page_guides=guides,
        )
        progress.set_stage("extract")
        from pipelines.shaping import DriftGuard  # reliab: type drift coerced and counted before dlt sees it

        drift = DriftGuard.from_pipeline(pipeline)
        pipeline.extract(drift.attach(outreach_source(client, plan, progress)), loader_file_format="parquet")
        t_extract = time.monotonic() - started
        progress.set_stage("normalize")
        t0 = time.monotonic()
        pipeline.normalize()
        t_normalize = time.monotonic() - t0
    except BaseException as exc:
        progress.set_stage("failed")
        inner = unwrap_error(exc)
        if isinstance(inner, OutreachError):
            raise inner from None
        raise
    finally:
        client.close()
    stats = client.stats.snapshot()
    report = WorkspaceReport(
        workspace_id=workspace_id,
        workspace_name=str(workspace.get("name") or ""),
        pipeline_name=pipeline.pipeline_name,
        mode=mode,
        rows=_normalized_rows(pipeline) or dict(progress.row_counts),
        requests=stats["requests"],
        rate_limited=stats["rate_limited"],
        retries=stats["retries"],
        rate_wait_s=stats["rate_wait_s"],
        bodies_fetched=plan.counters.get("bodies_fetched", 0),
        bodies_from_events=plan.counters.get("bodies_from_events", 0),
        bodies_deferred=plan.counters.get("bodies_deferred", 0),
        campaigns_changed=len(changed),
        campaigns_total=len(campaigns),
        recipient_pages_read=sum(g.pages_read for g in plan.page_guides.values()),
        recipient_pages_listed=sum(g.last_page or 0 for g in plan.page_guides.values()),
        campaigns_read_whole=sum(1 for g in plan.page_guides.values() if g.reason),
        stage_seconds={"extract": round(t_extract, 3), "normalize": round(t_normalize, 3)},
    )
    drift.fill(report)  # reliab: drift counts into the summary
    progress.set_stage("extracted")
    return Extracted(pipeline=pipeline, report=report, synced_at=synced_at, progress=progress)


def _normalized_rows(pipeline: Any) -> dict[str, int]:
    """Rows per table from dlt's normalize step (every table, whichever path it took)."""
    trace = pipeline.last_trace
    info = trace.last_normalize_info if trace else None
    counts = info.row_counts if info else {}
    return {table: n for table, n in counts.items() if not table.startswith("_dlt")}


def _sync_destination(pipeline: Any) -> None:
    """Restore state from the destination when the local working dir is new or stale."""
    try:
        pipeline.sync_destination()
    except Exception as exc:  # noqa: BLE001 - an empty/new warehouse has nothing to restore
        log.debug("no state restored from the destination (%s)", type(exc).__name__)


def _read_bodies(pipeline: Any, workspace_id: str) -> tuple[dict[str, Any], list[str]]:
    from pipelines.warehouse import read_reply_bodies

    return read_reply_bodies(pipeline, workspace_id)


def load_workspace(extracted: Extracted) -> WorkspaceReport:
    """Load the workspace's pending packages; after a full sync, mark vanished rows. Hold the load lock."""
    pipeline = extracted.pipeline
    report = extracted.report
    extracted.progress.set_stage("load")
    t0 = time.monotonic()
    try:
        info = pipeline.load()
        info.raise_on_failed_jobs()
        report.load_ids = list(info.loads_ids)
        from pipelines.warehouse import drop_duplicate_history_rows

        drop_duplicate_history_rows(pipeline, report.workspace_id)
        if report.mode == "full":
            from pipelines.warehouse import mark_deleted

            report.marked_deleted = mark_deleted(pipeline, report.workspace_id, extracted.synced_at)
    except Exception as exc:
        extracted.progress.set_stage("failed")
        inner = unwrap_error(exc)
        if isinstance(inner, OutreachError):
            raise inner from None
        from pipelines.diagnose import explain, warehouse_path_of  # reliab: the root cause, in one line

        raise OutreachError(
            f"loading workspace {report.workspace_id} into the warehouse failed: "
            f"{explain(exc, warehouse_path_of(pipeline))}; the pending load resumes at the next run"
        ) from exc
    report.stage_seconds["load"] = round(time.monotonic() - t0, 3)
    extracted.progress.set_stage("done")
    return report


def load_spool_events(*, spool_dir: Path | None, duckdb_path: str | Path | None, pipelines_dir: str | None) -> int:
    """Load webhook events from the spool (pipelines.events, issue 6) first; 0 if unavailable."""
    if spool_dir is None or not Path(spool_dir).is_dir():
        return 0
    try:
        from pipelines.events import load_spool
    except ImportError:
        log.debug("pipelines.events not available: spool not loaded")
        return 0
    pipeline = make_pipeline(S.EVENTS_PIPELINE_NAME, duckdb_path, pipelines_dir)
    return int(load_spool(pipeline, spool_dir))


def run_sync(
    *,
    mode: str = "quick",
    api_keys: list[str] | None = None,
    base_url: str | None = None,
    duckdb_path: str | Path | None = None,
    spool_dir: str | Path | None = None,
    progress: bool = True,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    reply_lookback_s: int | None = None,
    request_timeout: float | None = None,
    workers: int | None = None,
    pipelines_dir: str | Path | None = None,
) -> SyncReport:
    """Sync every workspace (one API key each) into one dataset; None arguments come from dlt config.

    Workspaces run concurrently (own pipeline, state and rate budget); loads are
    serialised. If a workspace fails, the others still load, and the first error
    is raised after all finished.
    """
    if mode not in S.MODES:
        raise ConfigError(f"unknown mode {mode!r}: use one of {', '.join(S.MODES)}")
    started = time.monotonic()
    # reliab: the warehouse is checked before any API request (pipelines.diagnose): a given path at once,
    # without importing dlt (a bad key below must still fail in well under 2 s); the configured one (default
    # path, destination, storage-format note) needs dlt's config, after the fast key check.
    from pipelines.diagnose import preflight_configured, preflight_given

    preflight_given(duckdb_path)
    accounts: dict[int, Any] = {}
    if api_keys and base_url:  # fail fast on a bad key, before dlt and friends are even imported
        accounts = check_keys(list(api_keys), base_url, request_timeout)
    preflight_configured(duckdb_path)
    cfg = resolve_config(
        api_keys=api_keys,
        base_url=base_url,
        duckdb_path=duckdb_path,
        spool_dir=spool_dir,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        reply_lookback_s=reply_lookback_s,
        request_timeout=request_timeout,
        workers=workers,
        pipelines_dir=str(pipelines_dir) if pipelines_dir else None,
    )
    if not accounts:
        accounts = check_keys(cfg.api_keys, cfg.base_url, cfg.request_timeout)
    demo_guard.refuse_foreign_workspaces(None if _configured_destination() else cfg.duckdb_path, accounts.values())
    _preload_libraries()
    lock = threading.RLock()
    report = SyncReport(mode=mode, destination=_destination_label(cfg.duckdb_path))
    with lock:
        report.events_loaded = load_spool_events(
            spool_dir=cfg.spool_dir, duckdb_path=cfg.duckdb_path, pipelines_dir=cfg.pipelines_dir
        )
    trackers = [WorkspaceProgress(label=f"key #{i + 1}") for i in range(len(cfg.api_keys))]

    def one(index: int) -> WorkspaceReport:
        account = accounts[index]
        if isinstance(account, BaseException):
            raise account
        extracted = extract_workspace(
            cfg.api_keys[index], mode=mode, config=cfg, warehouse_lock=lock, progress=trackers[index], account=account
        )
        with lock:
            return load_workspace(extracted)

    errors: list[tuple[int, BaseException]] = []
    with ProgressDisplay(trackers, enabled=progress):
        with ThreadPoolExecutor(max_workers=len(cfg.api_keys), thread_name_prefix="outreach-ws") as pool:
            futures = [pool.submit(one, i) for i in range(len(cfg.api_keys))]
            for i, future in enumerate(futures):
                try:
                    report.workspaces.append(future.result())
                except BaseException as exc:  # noqa: BLE001 - re-raised below after all finished
                    errors.append((i, exc))
    report.seconds = round(time.monotonic() - started, 3)
    for ws in report.workspaces:
        log.info("workspace %s synced: %d requests, %d 429s", ws.workspace_id, ws.requests, ws.rate_limited)
    if errors:
        index, exc = errors[0]
        if isinstance(exc, OutreachError) and len(cfg.api_keys) > 1:
            raise type(exc)(f"workspace key #{index + 1}: {exc}") from None
        raise exc
    return report


def check_keys(api_keys: list[str], base_url: str, timeout: float | None) -> dict[int, Any]:
    """GET /account for every key at once: {index: account or the OutreachError}.

    If every key fails, the first error is raised at once (a bad key exits in well under 2 s).
    """
    from pipelines.client import DEFAULT_TIMEOUT_S

    def check(key: str) -> Any:
        try:
            with OutreachClient(key, base_url, rate_limit_per_minute=None, timeout=timeout or DEFAULT_TIMEOUT_S) as c:
                return connectivity_check(c)
        except OutreachError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, len(api_keys))) as pool:
        results = dict(enumerate(pool.map(check, api_keys)))
    if results and all(isinstance(r, BaseException) for r in results.values()):
        first = results[0]
        if len(api_keys) > 1:
            raise type(first)(f"workspace key #1: {first}")
        raise first
    return results


def _preload_libraries() -> None:
    """Import what dlt imports lazily, once, before worker threads race on it (pandas is not thread-safe
    to import concurrently: "partially initialized module" errors)."""
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    from dlt.common.libs import pyarrow as _dlt_pyarrow  # noqa: F401

    try:
        from dlt.common.libs import pandas as _dlt_pandas  # noqa: F401
    except ImportError:  # pragma: no cover
        pass
