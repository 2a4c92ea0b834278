"""What the scale-out benches share, in one process or on a work pool: the N = 1,000 targets, progress and
load-average lines, the sandbox of N tiny workspaces and its keys, ratios and a straight-line fit."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROJECT_N = 1000
SCHEDULE_S = 15 * 60
# targets at N = 1,000: an idle quick sync's seconds per workspace, and peak RSS against N = 10
TARGET_IDLE_S_PER_WORKSPACE = 0.05
TARGET_PEAK_RSS_RATIO = 1.5


def progress(message: str) -> None:
    """One progress line on stderr (stdout carries only the JSON lines)."""
    print(f"[scale_out {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def sync_env(keys: Sequence[str], base_url: str, home: Path) -> dict[str, str]:
    """This process's environment without its own sync settings, for an `outreach sync` of `keys` against
    `base_url` (rate limit off), its dlt pipelines and (empty) spool under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__API_KEYS=json.dumps(list(keys)),
        SOURCES__OUTREACH__BASE_URL=base_url,
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0",
        SOURCES__OUTREACH__PIPELINES_DIR=str(home / "pipelines"),
        SOURCES__OUTREACH__SPOOL_DIR=str(home / "no-spool"),
    )
    return env


def load_avg() -> float:
    """The machine's 1-minute load average now: the figures mean something only beside it (a shared machine)."""
    return round(os.getloadavg()[0], 2)


def targets(idle_s_per_workspace: float, peak_rss_ratio: float | None) -> dict[str, Any]:
    """The N = 1,000 targets against the measured figures."""
    idle_met = idle_s_per_workspace <= TARGET_IDLE_S_PER_WORKSPACE
    rss_met = peak_rss_ratio is not None and peak_rss_ratio <= TARGET_PEAK_RSS_RATIO
    return {
        "idle_s_per_workspace_max": TARGET_IDLE_S_PER_WORKSPACE,
        "idle_met": idle_met,
        "peak_rss_ratio_max": TARGET_PEAK_RSS_RATIO,
        "peak_rss_met": rss_met,
        "met": idle_met and rss_met,
    }


def start_sandbox(n: int) -> Any:
    """A sandbox process with `n` tiny workspaces and no rate limit (the sandbox's ``--workspaces N``)."""
    from sandbox.server import SandboxProcess

    progress(f"N={n}: starting a sandbox with {n} tiny workspaces")
    started = time.perf_counter()
    sandbox = SandboxProcess(scale="tiny", rate_limit=0, workspaces=n).start()
    progress(f"N={n}: sandbox up in {time.perf_counter() - started:.1f} s")
    return sandbox


def workspace_keys(sandbox: Any, n: int) -> list[str]:
    """One rw admin key per workspace, the first `n` workspaces."""
    keys: dict[str, str] = {}
    for entry in sandbox.keys():
        if entry["level"] == "rw" and entry["role"] == "admin":
            keys.setdefault(entry["workspace_id"], entry["key"])
    found = list(keys.values())
    if len(found) < n:
        raise RuntimeError(f"the sandbox has {len(found)} workspaces, {n} were asked for")
    return found[:n]


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b
