"""The soak (bench/soak.py): a short run on the real sandbox and CLI, and its checks shown able to fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from bench.bi_reader import Reader, ReaderCounters
from bench.soak import SoakConfig, SoakRun, run_soak, summarise
from bench.soak_checks import duplicates

SHORT = SoakConfig(rounds=2, scale="tiny", workspaces=2, advance_s=1800)  # the 50-round soak is `make bench`


@pytest.mark.timeout(900)
def test_a_short_soak_meets_every_target(tmp_path: Path) -> None:
    summary = run_soak(SHORT, tmp_path).summary()
    failed = [name for name, met in summary["targets"].items() if not met]
    assert not failed, f"targets missed: {failed}; {summary}"
    assert summary["rounds"] == SHORT.rounds
    assert (summary["reader_errors"], summary["reader_lock_errors"]) == (0, 0), summary["reader_examples"]
    assert (summary["duplicates"], summary["truth_failures"], summary["model_build_failures"]) == (0, 0, 0)
    assert summary["faulted"] > 0 and summary["retries"] > 0  # the faults were on, and the syncs retried
    assert summary["reader_queries"] > 0 and summary["reader_publishes_seen"] == SHORT.rounds + 1
    assert summary["sync_rss"]["ratio"] <= summary["memory_ratio_max"]
    assert summary["ok"] is True


def test_the_reader_counts_a_lock_error_while_a_writer_holds_the_file(tmp_path: Path) -> None:
    bi_file = tmp_path / "outreach_bi.duckdb"
    con = duckdb.connect(str(bi_file))
    con.execute("create schema reporting")
    con.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(bi_file)!r}); print('held', flush=True); "
                               "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        counters = ReaderCounters()
        reader = Reader(bi_file, counters)
        reader.tick()
        reader.close()
    finally:
        holder.communicate("", timeout=30)
    assert counters.lock_errors == 1 and counters.read_errors == 0, counters.examples
    assert counters.examples[0].startswith("tick 1 open: IOException")


def _publish(bi_file: Path, rows: int) -> None:
    """As models/publish.py does: a new file renamed over the BI file."""
    tmp = bi_file.with_name(f".{bi_file.name}.tmp")
    con = duckdb.connect(str(tmp))
    con.execute("create schema reporting")
    con.execute(f"create table reporting.workspace_overview as select range as count_campaigns from range({rows})")
    con.execute("create table reporting.campaign_performance as select 1 as count_sent, 0 as count_replied")
    con.execute("create table reporting.campaign_daily as select current_date as activity_date")
    con.execute("create table reporting.lead_engagement as select 1 as id")
    con.close()
    os.replace(tmp, bi_file)


def test_the_reader_counts_each_publish_and_reads_the_new_file(tmp_path: Path) -> None:
    bi_file = tmp_path / "outreach_bi.duckdb"
    counters = ReaderCounters()
    reader = Reader(bi_file, counters)
    reader.tick()  # no BI file yet: nothing to read, nothing failed
    assert (counters.publishes_seen, counters.opens, counters.errors) == (0, 0, 0)
    for n in (1, 2, 3):
        _publish(bi_file, n)
        reader.tick()
        assert reader.held is not None
        assert reader.held.execute("select count(*) from reporting.workspace_overview").fetchone() == (n,)
    reader.tick()  # unchanged: no new publish
    reader.close()
    assert counters.publishes_seen == 3
    assert (counters.errors, counters.opens, counters.queries) == (0, 3 + 4, 4 * 2 * 4), counters.examples


def test_duplicates_finds_a_repeated_key_and_two_current_versions(tmp_path: Path) -> None:
    db = tmp_path / "outreach.duckdb"  # the real name: catalog and schema both `outreach`
    con = duckdb.connect(str(db))
    con.execute("create schema outreach.outreach")
    con.execute("create table outreach.outreach.replies (id varchar, body varchar)")
    con.execute("insert into outreach.outreach.replies values ('r1', 'a'), ('r2', 'b')")
    con.execute(
        "create table outreach.outreach.campaigns (id varchar, _dlt_valid_from timestamptz, _dlt_valid_to timestamptz)"
    )
    con.execute(
        "insert into outreach.outreach.campaigns values ('c1', '2026-01-01', '2026-01-02'), ('c1', '2026-01-02', null)"
    )
    con.close()
    assert duplicates(db) == {}
    con = duckdb.connect(str(db))
    con.execute("insert into outreach.outreach.replies values ('r1', 'a')")
    con.execute("insert into outreach.outreach.campaigns values ('c1', '2026-01-02', null)")
    con.close()
    assert duplicates(db) == {"replies": 1, "campaigns current": 1, "campaigns versions": 1}


def _round(n: int, *, rss: float = 300.0, duplicates: int = 0, truth_ok: bool = True) -> dict[str, object]:
    return {
        "round": n, "sync_exit": 0, "sync_wall_s": 1.0, "sync_peak_rss_mb": rss, "models_exit": 0,
        "models_wall_s": 1.0, "models_peak_rss_mb": 250.0, "requests": 10, "faulted": 1, "status_429": 0,
        "retries": 1, "duplicates": duplicates, "truth_ok": truth_ok,
        "truth": {"tolerated": 0, "bodies_null": 0, "bodies_differ": 0},
        "reader": {"errors": 0, "lock_errors": 0}, "reader_rss_mb": 60.0,
    }  # fmt: skip


def test_the_summary_misses_a_target_on_a_duplicate_a_truth_failure_or_growing_memory() -> None:
    setup = {"sync": {"exit": 0}, "models": {"exit": 0}, "truth": {"ok": True}, "duplicates": {}}
    final = {"errors": 0, "publishes_seen": 5}
    good = SoakRun(SoakConfig(rounds=4), setup, [_round(n) for n in range(1, 5)], final)
    assert summarise(good)["ok"] is True
    bad = SoakRun(
        SoakConfig(rounds=4),
        setup,
        [_round(1), _round(2, duplicates=3), _round(3, truth_ok=False, rss=400.0), _round(4, rss=400.0)],
        {**final, "errors": 1},
    )
    targets = summarise(bad)["targets"]
    assert not any(targets[t] for t in ("duplicates_0", "truth_failures_0", "memory_flat", "reader_errors_0"))
    assert summarise(bad)["ok"] is False
