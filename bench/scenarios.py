"""The sync scenarios of the memory and speed benchmarks: each side on its own sandbox (same seed, same scale,
same clock moves).

For one side: start a sandbox (out of process), optionally run an unmeasured full sync and move the
simulated clock, then measure one sync in a child process, then check the warehouse against an
independent snapshot of the API (`bench.truth`). Sandboxes are deterministic for a seed, so both sides
start from the same state. Snapshots use a separate key of the same workspace and are taken outside
the measured window (the sandbox's counters are reset right before the measured sync).

Every sandbox starts without a rate limit or latency; the scenario's limit and latency are switched on
through the control plane (`POST /_sandbox/rate_limit`, `POST /_sandbox/faults` latency_ms) for the
measured sync only, so setup syncs and snapshots do not crawl at 2 requests/s.
"""

from __future__ import annotations

import logging
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.bound import DOCUMENTED_RATE_LIMIT, Bound, change_bound, unchanged_fingerprints
from bench.sandboxes import sandbox_process, workspace_keys
from bench.sides import SideRun, run_side
from bench.snapshot import Snapshot, take_snapshot
from bench.truth import BASELINE_SPECS, TruthReport, check_warehouse

logger = logging.getLogger(__name__)

# 10% of API calls faulted: 5xx and 429 errors, truncated JSON bodies, and connections held then dropped.
FAULTS: dict[str, Any] = {
    "error_rate": 0.07,
    "statuses": [429, 500, 502, 503],
    "truncate_rate": 0.02,
    "timeout_rate": 0.01,
    "hang_ms": 3000,
    "seed": 11,
}


@dataclass(frozen=True)
class Scenario:
    """What happens before the measured sync, and the conditions it runs under."""

    name: str
    description: str
    measured_mode: str  # "full" or "quick" (the baseline has one mode: it just runs again)
    setup_full: bool = False  # an unmeasured full sync first
    advance_s: int = 0  # simulated seconds between the setup sync and the measured one
    rate_limit: int = 0  # requests a minute per key on the sandbox (0 = off)
    latency_ms: int = 0
    faults: dict[str, Any] | None = None


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario("full", "first full sync, no rate limit", "full"),
        Scenario("incremental", "quick sync after a simulated hour, no rate limit", "quick", True, 3600),
        Scenario("idle", "quick sync with no change, no rate limit", "quick", True, 0),
        Scenario("faults", "first full sync with 10% injected faults, no rate limit", "full", faults=FAULTS),
        Scenario(
            "paced", "first full sync at 120/min with 200 ms added latency", "full", rate_limit=120, latency_ms=200
        ),
        Scenario(
            "paced_incremental", "incremental at 120/min with 200 ms added latency", "quick", True, 3600, 120, 200
        ),
    )
}


@dataclass
class SideResult:
    """A side's measured run and its truth check."""

    run: SideRun
    truth: TruthReport | None = None
    truth_note: str = ""
    setup_error: str | None = None


@dataclass
class ScenarioResult:
    scenario: Scenario
    scale: str
    seed: int
    ours: SideResult
    baseline: SideResult | None
    bound: Bound
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """The JSON line: the headline keys first, then the detail."""
        o, b, s = self.ours.run, (self.baseline.run if self.baseline else None), self.scenario
        limit = s.rate_limit or DOCUMENTED_RATE_LIMIT
        bound_wall = (self.bound.requests + o.body_requests) / (limit / 60.0)
        rec: dict[str, Any] = {
            "scenario": s.name,
            "scale": self.scale,
            "ours_requests": o.list_requests,
            "baseline_requests": b.list_requests if b else None,
            "bound_requests": self.bound.requests,
            "ours_wall_s": o.wall_s,
            "baseline_wall_s": b.wall_s if b else None,
            "bound_wall_s": round(bound_wall, 1),
            "ours_peak_mb": o.peak_mb,
            "truth_ok": bool(o.ok and self.ours.truth is not None and self.ours.truth.ok),
            "baseline_peak_mb": b.peak_mb if b else None,
            "baseline_truth_ok": (
                bool(b.ok and self.baseline.truth is not None and self.baseline.truth.ok)
                if b and self.baseline
                else None
            ),
            "ours_ok": o.ok,
            "baseline_ok": b.ok if b else None,
            "ours_error": o.error or self.ours.setup_error,
            "baseline_error": (b.error or self.baseline.setup_error) if b and self.baseline else None,
            "ours_requests_total": o.requests,
            "ours_body_requests": o.body_requests,
            "baseline_requests_total": b.requests if b else None,
            "ours_429": o.status_429,
            "baseline_429": b.status_429 if b else None,
            "ours_rows": o.rows_total,
            "baseline_rows": b.rows_total if b else None,
            "requests_ratio_baseline_to_ours": _ratio(b.list_requests if b else None, o.list_requests),
            "wall_ratio_baseline_to_ours": _ratio(b.wall_s if b else None, o.wall_s),
            "ours_to_bound_requests": _ratio(o.list_requests, self.bound.requests),
            "ours_to_bound_wall": _ratio(o.wall_s, bound_wall) if s.rate_limit else None,
            "bound": self.bound.as_dict(),
            "truth_tolerated": self.ours.truth.tolerated if self.ours.truth else None,
            "truth_note": self.ours.truth_note,
            "rate_limit_per_minute": s.rate_limit,
            "bound_rate_limit_per_minute": limit,
            "latency_ms": s.latency_ms,
            "faults": s.faults,
            "seed": self.seed,
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": platform.node(),
        }
        rec.update(self.extra)
        return rec


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def _run_one_side(
    side: str, scenario: Scenario, scale: str, seed: int, workdir: Path, reply_body_cap: int | None
) -> tuple[SideResult, Snapshot | None, Snapshot | None]:
    """Run one side start to finish on its own sandbox; return its result and the before/after snapshots."""
    before: Snapshot | None = None
    with sandbox_process(scale=scale, seed=seed, rate_limit=0) as sb:
        keys = workspace_keys(sb)
        setup_error = None
        if scenario.setup_full:
            setup = run_side(sb, side=side, mode="full", api_key=keys.sync_key, workdir=workdir,
                             rate_limit_per_minute=0, reply_body_cap=reply_body_cap)  # fmt: skip
            logger.info("%s setup full sync: %.1f s, %d requests", side, setup.wall_s, setup.requests)
            if not setup.ok:
                setup_error = setup.error
            if side == "ours":
                before = take_snapshot(sb.base_url, keys.snapshot_key)
        if scenario.advance_s:
            sb.advance(scenario.advance_s)
        if scenario.faults or scenario.latency_ms:
            sb.set_faults(**{**(scenario.faults or {}), "latency_ms": scenario.latency_ms})
        if scenario.rate_limit:
            sb.set_rate_limit(scenario.rate_limit)
        logger.info("%s: measured %s sync (%s)", side, scenario.measured_mode, scenario.name)
        run = run_side(
            sb,
            side=side,
            mode=scenario.measured_mode,
            api_key=keys.sync_key,
            workdir=workdir,
            rate_limit_per_minute=scenario.rate_limit,  # 0: ours paces at nothing, like the sandbox
            reply_body_cap=reply_body_cap,
        )
        sb.set_faults()
        sb.set_rate_limit(0)
        after = take_snapshot(sb.base_url, keys.snapshot_key)
    result = SideResult(run=run, truth_note="direct snapshot", setup_error=setup_error)
    quick = scenario.measured_mode == "quick"
    tolerate = unchanged_fingerprints(before, after) if before is not None and quick else frozenset()
    if side == "ours":
        result.truth = check_warehouse(
            workdir / "ours.duckdb", after, ignore_is_read=quick, tolerate_campaigns=tolerate
        )
    else:
        result.truth = check_warehouse(workdir / "baseline.duckdb", after, specs=BASELINE_SPECS,
                                       workspace_column="_no_workspace_column", ignore_is_read=quick)  # fmt: skip
    logger.info("%s truth: %s\n%s", side, "ok" if result.truth.ok else "MISMATCH", result.truth.summary())
    return result, before, after


def run_scenario(
    scenario: Scenario,
    *,
    scale: str,
    seed: int,
    workdir: Path,
    with_baseline: bool = True,
    reply_body_cap: int | None = None,
) -> ScenarioResult:
    """Measure ours, then the baseline, then compute the bound from ours' before/after snapshots."""
    ours, before, after = _run_one_side("ours", scenario, scale, seed, workdir / "ours", reply_body_cap)
    assert after is not None
    bound = change_bound(before if scenario.measured_mode == "quick" else None, after)
    baseline = None
    if with_baseline:
        baseline, _, b_after = _run_one_side("baseline", scenario, scale, seed, workdir / "baseline", None)
        same = b_after is not None and b_after.campaigns == after.campaigns
        if not same:
            baseline.truth_note += "; WARNING: baseline sandbox state differs from ours"
        extra = {"same_state": same}
    else:
        extra = {}
    return ScenarioResult(scenario, scale, seed, ours, baseline, bound, extra)
