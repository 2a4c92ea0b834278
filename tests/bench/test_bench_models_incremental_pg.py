"""bench/models_incremental_pg.py's own parts: the simulated quick sync on PostgreSQL, the server's CPU seconds, and
its section of RESULTS.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.models_incremental_pg import server_cpu_s, touch
from bench.results_sections import incremental_pg_section
from devtools.pg_copy import copy_raw_tables
from devtools.synthetic import make_raw_warehouse
from tests.duckdb_sql import run_pg_sql


def test_a_touch_rewrites_about_one_in_a_hundred_rows_as_one_new_load(tmp_path: Path, pg_dsn: str) -> None:
    copy_raw_tables(make_raw_warehouse(tmp_path / "w.duckdb", recipients=3000), pg_dsn)
    line = touch(pg_dsn, 1)
    for table in ("campaign_recipients", "replies", "events"):
        ((written, rows),) = run_pg_sql(
            pg_dsn, f"select count(*) filter (where _dlt_load_id = '1800000001.5'), count(*) from outreach.{table}"
        )
        assert written == line["touched"][table] and 0 < written < rows / 50, (table, written, rows)
    stamped = "select count(*) from outreach.campaign_recipients where synced_at = '2026-03-02 12:11:00+00'"
    assert run_pg_sql(pg_dsn, stamped) == [(line["touched"]["campaign_recipients"],)]
    assert run_pg_sql(pg_dsn, "select count(*) from outreach._dlt_loads where load_id = '1800000001.5'") == [(1,)]


def test_the_server_cpu_counts_the_postmaster_and_its_backends(pg_server: Any, pg_dsn: str) -> None:
    before = server_cpu_s(pg_server.pid)
    run_pg_sql(pg_dsn, "select count(*) from generate_series(1, 3000000)")  # a backend's CPU, then it exits
    assert server_cpu_s(pg_server.pid) > before


def test_the_section_gives_each_run_its_row() -> None:
    build = {"wall_s": 10.0, "mart_s": {"lead_engagement": 2.0}, "tests_s_summed": 3.0, "load_avg_1m": [1.0, 1.5]}
    ratios = {"ratio_wall": 0.5, "ratio_cpu": 0.6, "ratio_server_cpu": 0.7}
    line = {"recipients": 1000, "tree": "abc1234", "date": "2026-11-30T13:15:24Z", "full": build,
            "incremental": {**build, "wall_s": 5.0}, **ratios}  # fmt: skip
    out = incremental_pg_section({"date": line["date"], "command": "python -m bench.models_incremental_pg",
                                  "result": [line], "note": "why"})  # fmt: skip
    assert "| 1,000 | abc1234 | 2026-11-30T13:15:24Z | 10.0 | 5.0 | 0.50x | 0.60x; 0.70x | 2.0 / 2.0 | 3.0 / 3.0 " in (
        "\n".join(out)
    )
    assert out[-1] == "why"
