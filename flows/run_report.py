"""What a flow run publishes: stage timings plus the sync and build reports, as markdown.

The markdown goes to a Prefect artifact. It is built only from reports and key references,
never from keys, so nothing secret can reach it (tests grep the artifacts for the keys).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StageClock:
    """Wall-clock seconds per stage, in the order the stages ran."""

    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - started

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds


@dataclass
class WorkspaceResult:
    """One workspace's outcome inside a run (no key, only its reference)."""

    key_ref: str
    ok: bool
    error: str = ""
    sync_report: Any = None  # pipelines.core.report.WorkspaceReport of the load
    stages: dict[str, float] = field(default_factory=dict)
    events_loaded: int = 0  # webhook events the sync loaded from the spool first


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def stage_table(rows: Sequence[tuple[str, str, float]]) -> str:
    """A markdown table of (scope, stage, seconds)."""
    return _table(["scope", "stage", "seconds"], [(scope, stage, f"{sec:.2f}") for scope, stage, sec in rows])


def render_run_markdown(
    *,
    title: str,
    mode: str,
    workspaces: Sequence[WorkspaceResult],
    run_stages: dict[str, float],
    sync_markdown: str = "",
    build_report: Any = None,
    build_error: str = "",
    dashboard: str = "",
) -> str:
    """The whole run's artifact: outcome per workspace, time per stage, sync and build reports."""
    failed = [w for w in workspaces if not w.ok]
    status = "failed" if failed or build_error else "succeeded"
    parts = [f"# {title}", "", f"mode: **{mode}**, status: **{status}**", ""]
    parts += [
        "## Workspaces",
        "",
        _table(
            ["key reference", "result"],
            [(w.key_ref, "loaded" if w.ok else f"FAILED: {w.error}") for w in workspaces],
        ),
        "",
    ]
    stage_rows = [(w.key_ref, stage, sec) for w in workspaces for stage, sec in w.stages.items()]
    stage_rows += [("run", stage, sec) for stage, sec in run_stages.items()]
    parts += ["## Time per stage", "", stage_table(stage_rows), ""]
    if sync_markdown:
        parts += ["## Sync", "", _demote(sync_markdown), ""]
    if build_report is not None:
        parts += ["## Models and data tests", "", _demote(build_report.to_markdown()), ""]
    elif build_error:
        parts += ["## Models and data tests", "", f"FAILED: {build_error}", ""]
    else:
        parts += ["## Models and data tests", "", "not run (no workspace loaded, or models skipped)", ""]
    if dashboard:
        parts += ["## Dashboard", "", dashboard, ""]
    return "\n".join(parts).rstrip() + "\n"


def _demote(markdown: str) -> str:
    """Push a nested report's headings two levels down so they sit under ours."""
    return re.sub(r"^(#{1,4}) ", lambda m: "#" * min(len(m.group(1)) + 2, 6) + " ", markdown, flags=re.M)
