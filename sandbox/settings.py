"""Sandbox settings and the size of each scale."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime


@dataclass(frozen=True)
class Scale:
    """Sizes of one scale, summed over the two default workspaces (the first gets two thirds, see seed.py)."""

    campaigns: int
    recipients: int
    mailboxes: int
    lists: int
    list_rows: int


SCALES: dict[str, Scale] = {
    "tiny": Scale(campaigns=3, recipients=300, mailboxes=3, lists=2, list_rows=60),
    "small": Scale(campaigns=12, recipients=3_000, mailboxes=6, lists=3, list_rows=200),
    "medium": Scale(campaigns=100, recipients=100_000, mailboxes=40, lists=4, list_rows=500),
    "large": Scale(campaigns=500, recipients=1_000_000, mailboxes=200, lists=4, list_rows=1000),
}

# Named situations a sandbox can be put in (sandbox/scenario.py, POST /_sandbox/scenario).
SCENARIOS = ("deliverability",)

# The simulation clock starts here for every seed (a Tuesday, 15:00 UTC: inside the
# send window of the European and US East campaigns).
SIM_START = datetime(2026, 3, 10, 15, 0, 0, tzinfo=UTC)


@dataclass(frozen=True)
class SandboxSettings:
    """Everything that shapes one sandbox instance."""

    seed: int = 7
    scale: str = "small"
    rate_limit: int = 120
    latency_ms: int = 0
    insecure_hooks: bool = False
    start: datetime = field(default=SIM_START)
    workspaces: int = 2
    scenario: str | None = None  # sandbox/scenario.py: applied when the sandbox starts

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"unknown scale {self.scale!r}: use one of {', '.join(SCALES)}")
        if self.rate_limit < 0:
            raise ValueError("rate_limit must be >= 0 (0 turns the limit off)")
        if self.latency_ms < 0:
            raise ValueError("latency_ms must be >= 0")
        if self.workspaces < 1:
            raise ValueError("workspaces must be >= 1")
        if self.scenario is not None and self.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.scenario!r}: use one of {', '.join(SCENARIOS)}")
