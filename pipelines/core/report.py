"""What a sync did: per-workspace figures, a one-screen summary and a markdown rendering."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.core.shown import shown


@dataclass
class WorkspaceReport:
    """Figures of one workspace's sync."""

    workspace_id: str
    workspace_name: str
    pipeline_name: str
    mode: str
    rows: dict[str, int] = field(default_factory=dict)
    requests: int = 0
    rate_limited: int = 0  # 429s seen
    retries: int = 0
    rate_wait_s: float = 0.0
    bodies_fetched: int = 0
    bodies_from_events: int = 0
    bodies_deferred: int = 0
    campaigns_changed: int = 0
    campaigns_from_events: int = 0  # quick: of them, re-read for a lead.unsubscribed/bounced event alone
    campaigns_total: int = 0
    recipient_pages_read: int = 0
    recipient_pages_listed: int = 0  # pages the changed campaigns have (a full read reads them all)
    campaigns_read_whole: int = 0  # quick: changed campaigns whose pages could not be narrowed down
    marked_deleted: dict[str, int] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    load_ids: list[str] = field(default_factory=list)
    # drift (pipelines.source.drift.DriftGuard): "table.column" -> values; enums: "table.column=value" -> rows
    coerced: dict[str, int] = field(default_factory=dict)  # another JSON type, converted without loss
    uncoerced: dict[str, int] = field(default_factory=dict)  # could not be typed: their records were rejected
    rejected: dict[str, int] = field(default_factory=dict)  # endpoint -> records rejected (pipelines.source.quarantine)
    unknown_values: dict[str, int] = field(default_factory=dict)  # enum values the spec does not name
    new_values: dict[str, int] = field(default_factory=dict)  # values of open enums not seen documented

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SyncReport:
    """The result of `run_sync`: one WorkspaceReport per workspace plus the spool load."""

    mode: str
    workspaces: list[WorkspaceReport] = field(default_factory=list)
    events_loaded: int = 0
    seconds: float = 0.0
    destination: str = ""

    @property
    def requests(self) -> int:
        return sum(w.requests for w in self.workspaces)

    @property
    def rate_limited(self) -> int:
        return sum(w.rate_limited for w in self.workspaces)

    def rows(self) -> dict[str, int]:
        """Rows extracted per table, all workspaces together."""
        total: dict[str, int] = {}
        for ws in self.workspaces:
            for table, n in ws.rows.items():
                total[table] = total.get(table, 0) + n
        return total

    def summary(self) -> str:
        """The one-screen summary the CLI prints."""
        lines = [
            f"outreach sync ({self.mode}) finished in {self.seconds:.1f}s -> {self.destination}",
            f"requests {self.requests}, 429s seen {self.rate_limited}, "
            f"retries {sum(w.retries for w in self.workspaces)}, "
            f"rate-limit wait {max((w.rate_wait_s for w in self.workspaces), default=0.0):.1f}s "
            "(wall clock, longest workspace)",
        ]
        if self.events_loaded:
            lines.append(f"webhook events loaded from the spool: {self.events_loaded}")
        for ws in self.workspaces:
            stages = ", ".join(f"{k} {v:.1f}s" for k, v in ws.stage_seconds.items())
            lines.append(
                f"- {shown(ws.workspace_name)} ({ws.workspace_id}, pipeline {ws.pipeline_name}): "
                f"{ws.requests} requests, {ws.rate_limited} 429s; "
                f"campaigns changed {ws.campaigns_changed}/{ws.campaigns_total}"
                + (f" ({ws.campaigns_from_events} from webhook events)" if ws.campaigns_from_events else "")
                + ", recipient pages read "
                f"{ws.recipient_pages_read}/{ws.recipient_pages_listed}; bodies fetched "
                f"{ws.bodies_fetched}, from events {ws.bodies_from_events}, deferred {ws.bodies_deferred}; {stages}"
            )
        lines += self.drift_lines()
        lines.append("rows per table:")
        width = max((len(t) for t in self.rows()), default=5)
        for table, n in sorted(self.rows().items()):
            lines.append(f"  {table:<{width}}  {n:>9,}")
        return "\n".join(lines)

    def drift(self) -> dict[str, dict[str, int]]:
        """Drift counts of every workspace together: {"coerced"|"uncoerced"|"unknown_values"|"new_values": {...}}."""
        out: dict[str, dict[str, int]] = {"coerced": {}, "uncoerced": {}, "unknown_values": {}, "new_values": {}}
        for ws in self.workspaces:
            for kind, counts in out.items():
                for key, n in getattr(ws, kind).items():
                    counts[key] = counts.get(key, 0) + n
        return out

    def rejected(self) -> dict[str, int]:
        """Records rejected per endpoint, every workspace together."""
        out: dict[str, int] = {}
        for ws in self.workspaces:
            for endpoint, n in ws.rejected.items():
                out[endpoint] = out.get(endpoint, 0) + n
        return out

    def drift_lines(self) -> list[str]:
        """Warnings about type drift and enum values, one line per kind (empty when there is none)."""
        drift = self.drift()
        lines = []
        if drift["uncoerced"]:
            lines.append(
                "WARNING type drift, values that could not be typed (their records were rejected, see "
                "outreach.rejected_records): " + _counts(drift["uncoerced"])
            )
        rejected = self.rejected()
        if rejected:
            lines.append("WARNING records rejected (not loaded; nothing marked deleted there): " + _counts(rejected))
        if drift["unknown_values"]:
            lines.append(
                "WARNING enum values the API spec does not name (they land as they are): "
                + _counts(drift["unknown_values"])
            )
        if drift["new_values"]:
            lines.append("new values seen (the spec lists none for these): " + _counts(drift["new_values"]))
        if drift["coerced"]:
            lines.append('coerced without loss (another JSON type, e.g. "42" for 42): ' + _counts(drift["coerced"]))
        return lines

    def to_markdown(self) -> str:
        """A markdown rendering (published by the Prefect flow as an artifact)."""
        out = [
            f"# outreach sync ({self.mode})",
            "",
            f"Finished in {self.seconds:.1f}s into `{self.destination}`. Requests: {self.requests}; "
            f"429s seen: {self.rate_limited}; webhook events loaded: {self.events_loaded}.",
            "",
            "| workspace | requests | 429s | retries | rate wait (s) | bodies fetched | from events | deferred | "
            "campaigns changed | extract (s) | load (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for ws in self.workspaces:
            out.append(
                f"| {_cell(ws.workspace_name)} | {ws.requests} | {ws.rate_limited} | {ws.retries} | "
                f"{ws.rate_wait_s:.1f} | "
                f"{ws.bodies_fetched} | {ws.bodies_from_events} | {ws.bodies_deferred} | "
                f"{ws.campaigns_changed}/{ws.campaigns_total} | {ws.stage_seconds.get('extract', 0):.1f} | "
                f"{ws.stage_seconds.get('load', 0):.1f} |"
            )
        drift = self.drift_lines()
        if drift:
            out += ["", *[f"- {line}" for line in drift]]
        out += ["", "| table | rows |", "|---|---|"]
        out += [f"| {t} | {n} |" for t, n in sorted(self.rows().items())]
        return "\n".join(out) + "\n"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{key} ({n:,})" for key, n in sorted(counts.items()))


def _cell(text: str) -> str:
    """A name as one cell of a Markdown table: on one line, its `|` not the cell's end."""
    return shown(text).replace("|", "\\|")
