"""bench.demo_time: the demo's printed steps are read back, and RESULTS.md's section shows every stored run."""

from __future__ import annotations

from bench.demo_time import parse_demo
from bench.results_commands import demo_section

DEMO_OUTPUT = """outreach demo: sandbox scale 'small', warehouse /x/data/outreach.duckdb
[1/5] sandbox and Prefect API, started side by side ...
  done in 7.5 s
[2/5] full sync of every workspace (Prefect flow sync-all) ...
  full sync done in 9.1 s: 2 workspaces, 705 requests, 0 429s, 3,894 rows extracted, 0 reply bodies deferred
  done in 9.8 s
[3/5] quick sync of every workspace (Prefect flow sync-all) ...
  quick sync done in 4.0 s: 2 workspaces, 68 requests, 0 429s, 856 rows extracted, 0 reply bodies deferred
  done in 4.0 s
"""


def test_the_demo_output_gives_each_step_and_sync() -> None:
    got = parse_demo(DEMO_OUTPUT)
    assert got["syncs"] == {"full": {"seconds": 9.1, "requests": 705}, "quick": {"seconds": 4.0, "requests": 68}}
    assert [s["seconds"] for s in got["steps"]] == [7.5, 9.8, 4.0]


def test_the_results_section_has_a_row_per_run_with_its_label_cpu_and_load() -> None:
    parsed = parse_demo(DEMO_OUTPUT)
    run = {"run": "first (cold)", "seconds": 25.0, "cpu_seconds": 40.2, "loadavg_before": "1.0 1.1 1.2",
           "loadavg_after": "1.5 1.2 1.2", **parsed}  # fmt: skip
    cli = {"loadavg_before": "1", "loadavg_after": "2", "full": {"seconds": 6.1, "requests": 704},
           "quick": {"seconds": 3.7, "requests": 96}}  # fmt: skip
    stored = [
        {"name": "demo_time", "scale": "small before", "result": {"date": "D1", "demo": [run], "cli": cli}},
        {"name": "demo_time", "scale": "small after", "result": {"date": "D2", "demo": [run, {**run, "run": "w"}]}},
    ]
    lines = demo_section(stored)
    rows = [line for line in lines if line.startswith("| before") or line.startswith("| after")]
    assert len(rows) == 3
    assert rows[0].split(" | ")[:6] == ["| before", "first (cold)", "D1", "25.0", "40.2", "1.0 1.1 1.2 → 1.5 1.2 1.2"]
    assert "7.5 / 9.8 / 4.0" in rows[0] and rows[2].startswith("| after | w | D2")
    assert any("full 6.1 s (704 requests), quick 3.7 s (96 requests)" in line for line in lines)
