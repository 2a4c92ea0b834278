"""Smoke test of `python -m bench`: the idle scenario at tiny scale, both sides, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ISSUE_KEYS = {
    "scenario", "scale", "ours_requests", "baseline_requests", "bound_requests", "ours_wall_s",
    "baseline_wall_s", "bound_wall_s", "ours_peak_mb", "truth_ok",
}  # fmt: skip


def test_idle_tiny_prints_the_json_line_and_results(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--scenario", "idle", "--scale", "tiny", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert ISSUE_KEYS <= record.keys()
    assert record["scenario"] == "idle" and record["scale"] == "tiny"
    assert record["truth_ok"] is True and record["baseline_truth_ok"] is True
    # Idle: nothing changed, so the bound is the fixed reads plus one replies page.
    assert record["bound"]["changed_campaigns"] == 0 and record["bound"]["recipient_pages"] == 0
    assert record["bound_requests"] == record["bound"]["fixed"] + 1
    assert 0 < record["ours_requests"] < record["baseline_requests"]
    assert record["ours_peak_mb"] > 0 and record["ours_wall_s"] > 0
    table = (tmp_path / "RESULTS.md").read_text()
    assert "| idle | tiny |" in table and "Machine:" in table
