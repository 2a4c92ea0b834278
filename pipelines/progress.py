"""Live progress of a sync: pages, rows, requests and time waiting on the rate limit.

Counters are thread-safe. `ProgressDisplay` renders them with rich on stderr
while a sync runs (only on a terminal); elsewhere it logs one line every 15 s.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class WorkspaceProgress:
    """Per-workspace counters, updated by the resources' threads."""

    label: str
    stage: str = "starting"
    pages: dict[str, int] = field(default_factory=dict)
    row_counts: dict[str, int] = field(default_factory=dict)
    stats_source: Callable[[], dict[str, Any]] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def page(self, resource: str, n: int = 1) -> None:
        with self._lock:
            self.pages[resource] = self.pages.get(resource, 0) + n

    def rows(self, table: str, n: int) -> None:
        with self._lock:
            self.row_counts[table] = self.row_counts.get(table, 0) + n

    def set_stage(self, stage: str) -> None:
        self.stage = stage

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            snap: dict[str, Any] = {"stage": self.stage, "pages": dict(self.pages), "rows": dict(self.row_counts)}
        snap["client"] = self.stats_source() if self.stats_source else {}
        return snap


class ProgressDisplay:
    """Render a list of WorkspaceProgress until stopped (context manager)."""

    def __init__(self, items: list[WorkspaceProgress], *, enabled: bool) -> None:
        self.items = items
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressDisplay:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True, name="outreach-progress")
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        if sys.stderr.isatty():
            self._run_live()
        else:
            while not self._stop.wait(15):
                for item in self.items:
                    log.info("progress %s: %s", item.label, _line(item.snapshot()))

    def _run_live(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(stderr=True)
        with Live(self._render(), console=console, refresh_per_second=4, transient=True) as live:
            while not self._stop.wait(0.25):
                live.update(self._render())

    def _render(self) -> Any:
        from rich.table import Table

        table = Table(title="outreach sync", expand=False)
        for column in ("workspace", "stage", "pages", "rows", "requests", "429s", "retries", "rate wait"):
            table.add_column(column)
        for item in self.items:
            snap = item.snapshot()
            client = snap["client"]
            table.add_row(
                item.label,
                snap["stage"],
                _pairs(snap["pages"]),
                _pairs(snap["rows"]),
                str(client.get("requests", 0)),
                str(client.get("rate_limited", 0)),
                str(client.get("retries", 0)),
                f"{client.get('rate_wait_s', 0.0):.1f}s",
            )
        return table


def _pairs(counts: dict[str, int]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "-"


def _line(snap: dict[str, Any]) -> str:
    client = snap["client"]
    rows = sum(snap["rows"].values())
    pages = sum(snap["pages"].values())
    return (
        f"stage={snap['stage']} pages={pages} rows={rows} requests={client.get('requests', 0)} "
        f"429s={client.get('rate_limited', 0)} rate_wait={client.get('rate_wait_s', 0.0):.1f}s"
    )
