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
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from models import PROJECT_DIR
from models.dbt_invoke import invoke
from models.settings import WarehouseTarget

log = logging.getLogger(__name__)

FRESHNESS_FILE = "source_freshness.json"
#: dbt's statuses, best to worst
STATUSES = ("pass", "warn", "error", "runtime error")


@dataclass(frozen=True)
class SourceFreshness:
    """One raw table's freshness: dbt's status, the newest synced_at and its age when checked."""

    source: str  # raw table, e.g. workspaces
    status: str  # pass | warn | error | runtime error
    max_loaded_at: str | None = None  # ISO 8601, UTC
    age_s: float | None = None
    warn_after: str = ""  # e.g. "45 minutes"
    error_after: str = ""
    message: str = ""  # a runtime error, one line

    def line(self) -> str:
        """`workspaces: warn, last loaded 1.2 h ago (warn after 45 minutes, error after 3 hours)`."""
        if self.status == "runtime error":
            return f"{self.source}: cannot check ({self.message})"
        age = "never loaded" if self.age_s is None else f"last loaded {_age(self.age_s)} ago"
        limits = ", ".join(x for x in (f"warn after {self.warn_after}" if self.warn_after else "",
                                       f"error after {self.error_after}" if self.error_after else "") if x)  # fmt: skip
        return f"{self.source}: {self.status}, {age}" + (f" ({limits})" if limits else "")


@dataclass
class FreshnessReport:
    """`dbt source freshness` on one warehouse: when it ran and each checked source's outcome."""

    target: str
    checked_at: str  # ISO 8601, UTC (wall clock)
    sources: list[SourceFreshness] = field(default_factory=list)
    error: str = ""  # the command itself failed (one line); sources may then be empty

    @property
    def worst(self) -> str:
        """The worst status over the sources (`pass` when none was checked and nothing failed)."""
        if self.error:
            return "runtime error"
        return max((s.status for s in self.sources), key=_rank, default="pass")

    def problems(self) -> list[SourceFreshness]:
        return [s for s in self.sources if s.status != "pass"]

    def summary_lines(self) -> list[str]:
        """One line for the whole, then one per source that is not fresh."""
        if self.error:
            return [f"source freshness: not checked ({self.error})"]
        stale = self.problems()
        head = f"source freshness: {len(self.sources) - len(stale)}/{len(self.sources)} fresh"
        return [head] + [f"  {s.line()}" for s in stale]

    def to_markdown(self) -> str:
        out = [
            "### Source freshness",
            "",
            f"Checked {self.checked_at} (wall clock) on `{self.target}`.",
            "",
        ]
        if self.error:
            return "\n".join(out + [f"Not checked: {self.error}"])
        out += [
            "| source | status | newest synced_at | age | warn after | error after |",
            "|---|---|---|---:|---|---|",
        ]
        out += [
            f"| {s.source} | {s.status} | {s.max_loaded_at or ''} | {'' if s.age_s is None else _age(s.age_s)} "
            f"| {s.warn_after} | {s.error_after} |"
            for s in self.sources
        ]
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "checked_at": self.checked_at, "error": self.error,
                "sources": [asdict(s) for s in self.sources]}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FreshnessReport:
        return cls(
            target=str(data.get("target", "")), checked_at=str(data.get("checked_at", "")),
            error=str(data.get("error", "")),
            sources=[SourceFreshness(**s) for s in data.get("sources", [])],
        )  # fmt: skip


def check_freshness(
    target: WarehouseTarget,
    *,
    dbt_vars: dict[str, Any] | None = None,
    project_dir: Path = PROJECT_DIR,
) -> FreshnessReport:
    """Run `dbt source freshness` (same target dir and vars as the build, so dbt's partial parse is shared),
    save the outcome beside the warehouse and return it. Never raises for a stale or unreadable source."""
    checked_at = datetime.now(UTC).replace(microsecond=0).isoformat()
    outcome = invoke(["source", "freshness"], target, dbt_vars=dbt_vars, project_dir=project_dir)
    report = FreshnessReport(target=target.label, checked_at=checked_at)
    results = [r for r in outcome.results if str(getattr(r.node, "resource_type", "")) == "source"]  # not the hook
    report.sources = sorted((_source(r) for r in results), key=lambda s: s.source)
    if outcome.exception is not None:
        report.error = _first_line(outcome.exception)
    elif not report.sources and not outcome.success:
        report.error = f"dbt source freshness failed (see the dbt log under {target.state_dir / 'logs'})"
    save_freshness(target, report)
    return report


def save_freshness(target: WarehouseTarget, report: FreshnessReport) -> Path:
    path = target.state_dir / FRESHNESS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(report.to_dict(), indent=1))
    os.replace(tmp, path)
    return path


def read_freshness(target: WarehouseTarget) -> FreshnessReport | None:
    """The last build's freshness outcome for this warehouse, or None if no build recorded one."""
    path = target.state_dir / FRESHNESS_FILE
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
    return SourceFreshness(
        source=str(node.name),
        status=status,
        max_loaded_at=_iso(max_loaded_at) if status != "runtime error" else None,
        age_s=float(result.age) if status != "runtime error" and getattr(result, "age", None) is not None else None,
        warn_after=_threshold(getattr(criteria, "warn_after", None)),
        error_after=_threshold(getattr(criteria, "error_after", None)),
        message=" ".join(str(result.message or "").split())[:300] if status == "runtime error" else "",
    )


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


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _rank(status: str) -> int:
    return STATUSES.index(status) if status in STATUSES else len(STATUSES)


def _first_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__
