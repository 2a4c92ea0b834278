"""The outcome of `dbt source freshness`, per source: plain data, read by the build's report and `outreach status`.

It imports nothing of models/, so the build's report can hold it without importing dbt's runner.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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
        age = "never loaded (no row has a synced_at)" if self.age_s is None else f"last loaded {_age(self.age_s)} ago"
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


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _rank(status: str) -> int:
    return STATUSES.index(status) if status in STATUSES else len(STATUSES)
