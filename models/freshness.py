"""`dbt source freshness` with every build: its outcome per source, kept beside the warehouse for `outreach status`.

The thresholds are in staging/sources.yml (from prefect.yaml's schedules) and are measured by dbt against
`synced_at`, the wall clock of the sync that last wrote a row: freshness asks whether the schedules ran,
so it is on the wall clock (the marts' own "now" is the service's clock, stg_service_clock). A stale
source never stops a build: the marts still show what the warehouse holds, and the outcome is reported
in the build's summary, its Markdown (the Prefect artifact), `outreach status` and the demo summary.

The last outcome is written to `<state dir>/source_freshness.json` (`.<stem>_dbt/` beside a DuckDB
warehouse, `data/.postgres_dbt/` for PostgreSQL), replaced atomically; `read_freshness` reads it.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from models import PROJECT_DIR
from models.dbt_invoke import invoke
from models.freshness_outcome import FreshnessReport, SourceFreshness
from models.settings import dbt_state_dir
from pipelines.warehouse.destination import Warehouse

log = logging.getLogger(__name__)

FRESHNESS_FILE = "source_freshness.json"


def check_freshness(
    target: Warehouse,
    *,
    dbt_vars: dict[str, Any] | None = None,
    project_dir: Path = PROJECT_DIR,
    manifest: Any = None,
) -> FreshnessReport:
    """Run `dbt source freshness` (the build's target dir and vars; `manifest`: the build's `dbt parse` outcome,
    models.dbt_invoke.invoke), save the outcome beside the warehouse and return it. Never raises for a stale or
    unreadable source."""
    checked_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    outcome = invoke(["source", "freshness"], target, dbt_vars=dbt_vars, project_dir=project_dir, manifest=manifest)
    report = FreshnessReport(target=target.label, checked_at=checked_at)
    results = [r for r in outcome.results if str(getattr(r.node, "resource_type", "")) == "source"]  # not the hook
    report.sources = sorted((_source(r) for r in results), key=lambda s: s.source)
    if outcome.exception is not None:
        report.error = outcome.error_line()
    elif not report.sources and not outcome.success:
        report.error = f"dbt source freshness failed (see the dbt log under {dbt_state_dir(target) / 'logs'})"
    save_freshness(target, report)
    return report


def save_freshness(target: Warehouse, report: FreshnessReport) -> Path:
    path = dbt_state_dir(target) / FRESHNESS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_dict(), indent=1))
    os.replace(tmp, path)
    return path


def read_freshness(target: Warehouse) -> FreshnessReport | None:
    """The last build's freshness outcome for this warehouse, or None if no build recorded one."""
    path = dbt_state_dir(target) / FRESHNESS_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning(
            "cannot read %s (%s): run `outreach models` to check freshness again",
            path,
            exc,
        )
        return None
    return FreshnessReport.from_dict(data)


def _source(result: Any) -> SourceFreshness:
    """One dbt SourceFreshnessResult (or the partial result of a source that could not be checked)."""
    node = result.node
    status = str(getattr(result.status, "value", result.status))
    criteria = getattr(node, "freshness", None)
    max_loaded_at = getattr(result, "max_loaded_at", None)
    loaded = status != "runtime error" and not _never(max_loaded_at)
    return SourceFreshness(
        source=str(node.name),
        status=status,
        max_loaded_at=_iso(max_loaded_at) if loaded else None,
        age_s=float(result.age) if loaded and getattr(result, "age", None) is not None else None,
        warn_after=_threshold(getattr(criteria, "warn_after", None)),
        error_after=_threshold(getattr(criteria, "error_after", None)),
        message=" ".join(str(result.message or "").split())[:300] if status == "runtime error" else "",
    )


def _never(max_loaded_at: datetime | None) -> bool:
    """No row has a synced_at (a table never loaded): dbt then gives 0001-01-01 (its adapters' calculate_freshness),
    and an age of some 740,000 days."""
    return max_loaded_at is None or max_loaded_at.year == 1


def _threshold(value: Any) -> str:
    count, period = getattr(value, "count", None), getattr(value, "period", None)
    if not count or period is None:
        return ""
    unit = str(getattr(period, "value", period))
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()
