"""Live progress of a sync: pages, rows, requests, time waiting on the rate limit, and an ETA.

Counters are thread-safe. `ProgressDisplay` renders them (`SyncProgress`) with rich on stderr while a sync
runs on a terminal; elsewhere (cron, nohup, CI) it prints plain lines on stderr, one per workspace every
`PLAIN_EVERY_S` at most, and only when something changed. A pause (a `Retry-After`, a backoff) shows as
"waiting Ns: why". A model build is shown the same way (models/progress.py).

The rate wait shown is wall-clock time during which the workspace waited for its rate limit (the client's
`rate_wait_s`), not the sum over its threads. The ETA counts pages: those read, against those known, where a
listing already started counts its `meta.last_page` and one not started yet counts what `expect` said (e.g.
a campaign's recipient pages from its `total_leads`); the rate is the pages read per second so far.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pipelines.core import constants

log = logging.getLogger(__name__)

PLAIN_EVERY_S = 10.0


@dataclass
class WorkspaceProgress:
    """Per-workspace counters, updated by the resources' threads."""

    label: str
    stage: str = "starting"
    pages: dict[str, int] = field(default_factory=dict)
    row_counts: dict[str, int] = field(default_factory=dict)
    stats_source: Callable[[], dict[str, Any]] | None = None
    paging_source: Callable[[], Mapping[str, tuple[int, int]]] | None = None  # listing -> (read, last_page)
    expected: dict[str, int] = field(default_factory=dict)  # listing -> pages expected before it starts
    started: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def page(self, resource: str, n: int = 1) -> None:
        with self._lock:
            self.pages[resource] = self.pages.get(resource, 0) + n

    def rows(self, table: str, n: int) -> None:
        with self._lock:
            self.row_counts[table] = self.row_counts.get(table, 0) + n

    def set_stage(self, stage: str) -> None:
        self.stage = stage

    def settle(self) -> None:
        """Keep the sources' last figures and let go of the sources: the run keeps every workspace's progress to
        the end, and a bound method of a closed API client would keep the client (its connection pool, its TLS
        context, its listings) alive with it, growing the run's memory with every workspace."""
        stats = self.stats_source() if self.stats_source else {}
        paging = dict(self.paging_source()) if self.paging_source else {}
        self.stats_source = lambda: dict(stats)
        self.paging_source = lambda: paging

    def expect(self, pages: Mapping[str, int]) -> None:
        """Pages of listings not read yet (listing path -> pages), for the ETA."""
        with self._lock:
            self.expected.update(pages)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            snap: dict[str, Any] = {"stage": self.stage, "pages": dict(self.pages), "rows": dict(self.row_counts)}
            expected = dict(self.expected)
        snap["client"] = self.stats_source() if self.stats_source else {}
        read, known = paging_totals(self.paging_source() if self.paging_source else {}, expected)
        snap["pages_read"], snap["pages_known"] = read, known
        snap["eta_s"] = eta_seconds(read, known, time.monotonic() - self.started)
        return snap


def paging_totals(listings: Mapping[str, tuple[int, int]], expected: Mapping[str, int]) -> tuple[int, int]:
    """(pages read, pages known): a started listing counts its last_page, a listing not started its expectation."""
    read = sum(r for r, _ in listings.values())
    known = sum(max(r, last) for r, last in listings.values())
    known += sum(n for path, n in expected.items() if path not in listings)
    return read, known


def eta_seconds(read: int, known: int, elapsed: float) -> float | None:
    """Seconds left at the pace so far (None until a few pages tell the pace)."""
    if read < 3 or elapsed <= 0:
        return None
    return max(0, known - read) * elapsed / read


def expected_recipient_pages(
    campaigns: list[dict[str, Any]], changed: list[str], mode: str, per_page: int
) -> dict[str, int]:
    """Recipient pages the changed campaigns will need, from `stats.total_leads` in the campaign list: all of
    them in a full sync; at least one each in a quick sync (it reads only the pages that changed)."""
    wanted = set(changed)
    out: dict[str, int] = {}
    for campaign in campaigns:
        cid = str(campaign.get("id"))
        if cid not in wanted:
            continue
        raw_stats = campaign.get("stats")
        stats: Mapping[str, Any] = raw_stats if isinstance(raw_stats, Mapping) else {}
        try:
            leads = int(stats.get("total_leads") or 0)
        except (TypeError, ValueError):
            leads = 0
        out[f"/campaigns/{constants.segment(cid)}/leads"] = max(1, -(-leads // per_page)) if mode == "full" else 1
    return out


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = round(seconds)
    if whole >= 3600:
        return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{whole}s"


class ProgressSource(Protocol):
    """What a `ProgressDisplay` shows."""

    def plain_lines(self) -> list[tuple[str, str]]:
        """Per thing shown: (what must change for its line to be printed again, the line)."""

    def renderable(self) -> Any:
        """The live display's content (rich)."""


class SyncProgress:
    """A sync's workspaces: a table on a terminal, a line per workspace elsewhere."""

    def __init__(self, items: list[WorkspaceProgress]) -> None:
        self.items = items

    def plain_lines(self) -> list[tuple[str, str]]:
        lines = [f"progress {item.label}: {_line(item.snapshot())}" for item in self.items]
        return [(line.split(" eta=")[0], line) for line in lines]  # a changed ETA alone is no news

    def renderable(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        table = Table(title="outreach sync", expand=False)
        for column in (
            "workspace",
            "stage",
            "pages",
            "rows",
            "requests",
            "429s",
            "retries",
            "rate wait",
            "done",
            "ETA",
        ):
            table.add_column(column)
        for item in self.items:
            snap = item.snapshot()
            client = snap["client"]
            table.add_row(
                Text(item.label),  # as it is: rich reads [brackets] in a workspace's name as markup
                Text(snap["stage"] + (f"\n{client['waiting']}" if client.get("waiting") else "")),
                _pairs(snap["pages"]),
                _pairs(snap["rows"]),
                str(client.get("requests", 0)),
                str(client.get("rate_limited", 0)),
                str(client.get("retries", 0)),
                f"{client.get('rate_wait_s', 0.0):.1f}s",
                f"{snap['pages_read']}/{snap['pages_known']} pages",
                format_eta(snap["eta_s"]),
            )
        return table


class StageProgress:
    """A command's stage and, within it, how many of its things are done of all (`unit`: "nodes", "scopes"), with
    the time since it started: one line, live on a terminal, else printed again when the stage or the count moved."""

    def __init__(self, command: str, unit: str) -> None:
        self.command, self.unit = command, unit
        self.stage = "starting"
        self.started = time.monotonic()
        self.done = 0
        self.total = 0
        self._lock = threading.Lock()

    def set_stage(self, stage: str, total: int = 0) -> None:
        """A new stage, of `total` things to do (0: not counted), none done yet."""
        with self._lock:
            self.stage, self.done, self.total = stage, 0, total

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n

    def parts(self) -> list[str]:
        """What the line says before the time, each part its own (under the lock)."""
        return [self.stage + (f": {self.done}/{self.total} {self.unit}" if self.total else "")]

    def line(self) -> str:
        """`drawing: 40/85 scopes · 12s`."""
        with self._lock:
            parts = self.parts()
        return " · ".join([*parts, format_eta(time.monotonic() - self.started)])

    def plain_lines(self) -> list[tuple[str, str]]:
        """A line again when the stage or the count changed (a clock ticking alone is no news)."""
        with self._lock:
            news = f"{self.stage} {self.done}"
        return [(news, f"progress {self.command}: {self.line()}")]

    def renderable(self) -> Any:
        from rich.spinner import Spinner
        from rich.text import Text

        return Spinner("dots", text=Text(f"outreach {self.command}: {self.line()}"))  # as it is: no [markup] read


class ProgressDisplay:
    """Render a `ProgressSource` on stderr until stopped (context manager): live on a terminal, else its changed
    lines every `PLAIN_EVERY_S` at most."""

    def __init__(self, source: ProgressSource, *, enabled: bool) -> None:
        self.source = source
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
            return
        printed: dict[int, str] = {}
        while not self._stop.wait(PLAIN_EVERY_S):
            for index, (news, line) in enumerate(self.source.plain_lines()):
                if printed.get(index) != news:
                    printed[index] = news
                    print(line, file=sys.stderr, flush=True)

    def _run_live(self) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(stderr=True)
        with Live(self.source.renderable(), console=console, refresh_per_second=4, transient=True) as live:
            while not self._stop.wait(0.25):
                live.update(self.source.renderable())


def _pairs(counts: dict[str, int]) -> str:
    return "\n".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "-"


def _line(snap: dict[str, Any]) -> str:
    client = snap["client"]
    rows = sum(snap["rows"].values())
    return (
        f"stage={snap['stage']} pages={snap['pages_read']}/{snap['pages_known']} rows={rows} "
        f"requests={client.get('requests', 0)} 429s={client.get('rate_limited', 0)} "
        f"rate_wait={client.get('rate_wait_s', 0.0):.1f}s"
        + (f" ({client['waiting']})" if client.get("waiting") else "")
        + f" eta={format_eta(snap['eta_s'])}"
    )
