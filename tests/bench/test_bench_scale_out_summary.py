"""bench/scale_out.py's arithmetic at N = 1,000: the ratios against N = 10, the targets, the RESULTS.md text.

The runs themselves take minutes (a sandbox of 1,000 workspaces, the CLI, a Prefect work pool): these tests
feed the summary the lines such a run prints, so that a target met or missed is reported as such.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from bench.results_sections import scale_out_section
from bench.scale_out import parse_ns, summarise
from bench.scale_out_pool import summarise_pool


def _line(n: int, mode: str, wall_s: float, peak: float, side: str = "ours", **extra: Any) -> dict[str, Any]:
    return {
        "side": side,
        "n": n,
        "mode": mode,
        "wall_s": wall_s,
        "s_per_workspace": round(wall_s / n, 3),
        "requests": 4 * n,
        "requests_per_workspace": 4.0,
        "peak_rss_mb": peak,
        "cpu_s": round(wall_s * 0.8, 2),
        "cpu_s_per_workspace": round(wall_s * 0.8 / n, 4),
        "load_avg_1m": [3.0, 4.5],
        "exit": 0,
        "warehouse": {"ok": True},
        **extra,
    }


def test_parse_ns_takes_comma_lists_and_refuses_nonsense() -> None:
    assert parse_ns("10,1000") == [10, 1000]
    assert parse_ns("200") == [200]
    with pytest.raises(argparse.ArgumentTypeError, match="whole numbers"):
        parse_ns("10,x")
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        parse_ns("0")


def test_targets_met_at_1000_are_measured_not_projected() -> None:
    lines = [
        _line(10, "full", 4.0, 260.0),
        _line(10, "idle_quick", 2.5, 255.0),
        _line(1000, "full", 230.0, 380.0),
        _line(1000, "idle_quick", 40.0, 300.0),
    ]
    summary = summarise(lines)
    assert summary["top_n"] == 1000 and summary["base_n"] == 10
    assert summary["idle_s_per_workspace_top_vs_base"] == round(0.04 / 0.25, 2)
    assert summary["peak_rss_top_vs_base"] == round(380.0 / 260.0, 2)
    assert summary["targets"]["idle_met"] and summary["targets"]["peak_rss_met"] and summary["targets"]["met"]
    assert "projected_idle_quick_s_at_1000" not in summary
    # as stored: the lines go through JSON (per-N keys become strings) before RESULTS.md is written
    stored = json.loads(json.dumps([*lines, summary]))
    text = "\n".join(scale_out_section({"date": "2026-11-25T19:33:48Z", "result": stored}))
    assert "N = 10, 1000 tiny workspaces" in text
    assert "0.04 s per workspace (target at most 0.05: met)" in text
    assert "1.46x that at N=10 (target at most 1.5x: met)" in text
    assert "| 3.0 / 4.5 |" in text
    assert "| 1000 | idle_quick | 40.0 | 0.04 | 32.00 | 4000 |" in text
    assert "idle quick: N=10 0.2, N=1000 0.032." in text


def test_a_missed_target_says_missed() -> None:
    lines = [_line(10, "idle_quick", 2.5, 250.0), _line(1000, "idle_quick", 60.0, 400.0)]
    summary = summarise(lines)
    assert summary["targets"] == {
        "idle_s_per_workspace_max": 0.05,
        "idle_met": False,
        "peak_rss_ratio_max": 1.5,
        "peak_rss_met": False,
        "met": False,
    }
    text = "\n".join(scale_out_section({"date": "d", "result": json.loads(json.dumps([*lines, summary]))}))
    assert "(target at most 0.05: MISSED)" in text and "(target at most 1.5x: MISSED)" in text


def test_below_1000_the_projection_stays() -> None:
    summary = summarise([_line(10, "idle_quick", 2.5, 250.0), _line(200, "idle_quick", 8.9, 300.0)])
    assert "targets" not in summary
    assert summary["projected_idle_quick_s_at_1000"] == pytest.approx(2.5 + (8.9 - 2.5) / 190 * 990, abs=0.1)


def test_pool_summary_ratios_use_the_largest_flow_run_process() -> None:
    pool = [
        _line(n, mode, wall, peak, side="pool-postgres", workers=2, peak_rss_total_mb=3 * peak, batch_runs=4)
        for n, mode, wall, peak in (
            (10, "full", 90.0, 260.0),
            (10, "idle_quick", 70.0, 250.0),
            (1000, "full", 500.0, 390.0),
            (1000, "idle_quick", 45.0, 255.0),
        )
    ]
    out = summarise_pool(pool)
    assert out["pool_base_n"] == 10 and out["pool_top_n"] == 1000
    assert out["pool_idle_s_per_workspace_top_vs_base"] == round(0.045 / 7.0, 2)
    assert out["pool_peak_rss_top_vs_base"] == 1.5  # max(full, quick) at each N: 390 / 260
    assert out["pool_targets"]["met"] is True  # 1.5x is at most 1.5x
