"""Progress of a model build, for `outreach models` (pipelines.core.progress.ProgressDisplay shows it on stderr).

A build is silent for a minute at 10M recipients: this says which stage it is in (the warehouse's checks, the
A/B statistics, dbt's parse, source freshness, dbt's build, the BI file) and, while dbt builds, how many of its
nodes (models, data tests) are done of all and which are running, the longest first. dbt's own events feed it
(`on_dbt_event`, a callback of models.dbt_invoke.invoke), from dbt's threads.
"""

from __future__ import annotations

import time
from typing import Any

from pipelines.core.progress import StageProgress, format_eta

#: running nodes named on the line, the longest-running first
SHOWN_RUNNING = 3


class BuildProgress(StageProgress):
    """The stage of one build and, while dbt runs a command, its nodes: done of all, and running since when."""

    def __init__(self) -> None:
        super().__init__("models", "nodes")
        self.running: dict[str, float] = {}  # node name -> when it started (monotonic)

    def set_stage(self, stage: str, total: int = 0) -> None:
        """A new stage: its nodes, if dbt runs any, are counted from none (dbt runs none between its commands)."""
        with self._lock:
            self.running.clear()
        super().set_stage(stage, total)

    def on_dbt_event(self, event: Any) -> None:
        """dbt's `LogStartLine` (a node started: it carries the command's node count) and `NodeFinished`."""
        name = event.info.name
        if name not in ("LogStartLine", "NodeFinished"):
            return
        node = event.data.node_info.node_name
        with self._lock:
            if name == "LogStartLine":
                self.total = max(self.total, int(event.data.total))
                self.running[node] = time.monotonic()
            elif self.running.pop(node, None) is not None:
                self.done += 1

    def parts(self) -> list[str]:
        """`building: 40/85 nodes`, then `running lead_engagement 12s, company_rollup 3s`."""
        now = time.monotonic()
        longest = sorted(self.running.items(), key=lambda item: item[1])[:SHOWN_RUNNING]
        running = ["running " + ", ".join(f"{node} {format_eta(now - since)}" for node, since in longest)]
        return [*super().parts(), *(running if longest else [])]
