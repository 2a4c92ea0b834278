"""`dbt source freshness` with every build: per-source outcome in the build's summary and Markdown, saved
beside the warehouse (what `outreach status` reads), shown in the demo summary; never a reason to fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.freshness import FRESHNESS_FILE, read_freshness
from models.settings import dbt_state_dir, resolve_target
from models.summary import demo_summary

pytestmark = pytest.mark.timeout(300)

OUTREACH = Path(sys.executable).with_name("outreach")


def _age(path: Path, ages: dict[str, str]) -> None:
    """Set each raw table's synced_at to now() minus an interval (the synthetic data is weeks old)."""
    con = duckdb.connect(str(path))
    try:
        for table, interval in ages.items():
            con.execute(f"update warehouse_tables.{table} set synced_at = now() - interval {interval}"
                        .replace("warehouse_tables", f'"{path.stem}".outreach'))  # fmt: skip
    finally:
        con.close()


def test_build_checks_freshness_and_reports_it_everywhere(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=600)
    _age(
        path,
        {
            "workspaces": "1 hour",
            "campaign_recipients": "2 hour",
            "replies": "30 hour",
            "campaign_stats": "60 hour",
            "campaign_variants": "5 minute",
            "campaign_daily_sends": "1 hour",
        },
    )
    report = build(path)
    assert report.passed, "a stale source never fails the build"
    assert report.freshness is not None and not report.freshness.error
    status = {s.source: s.status for s in report.freshness.sources}
    assert status == {
        "workspaces": "warn",
        "campaign_recipients": "pass",
        "replies": "warn",
        "campaign_stats": "error",
        "campaign_variants": "pass",
        "campaign_daily_sends": "pass",
    }
    assert report.freshness.worst == "error"
    workspaces = next(s for s in report.freshness.sources if s.source == "workspaces")
    assert workspaces.warn_after == "45 minutes" and workspaces.error_after == "3 hours"
    assert 3500 < (workspaces.age_s or 0) < 3700

    summary = report.summary()
    assert "source freshness: 3/6 fresh" in summary
    assert "  campaign_stats: error, last loaded 2.5 days ago (warn after 26 hours, error after 50 hours)" in summary
    assert "replies: warn, last loaded 30.0 h ago" in summary and "campaign_recipients:" not in summary
    markdown = report.to_markdown()
    assert "### Source freshness" in markdown and "| workspaces | warn |" in markdown
    assert "| campaign_variants | pass |" in markdown

    saved = read_freshness(resolve_target(path))
    assert saved is not None and saved.to_dict() == report.freshness.to_dict()
    state = dbt_state_dir(resolve_target(path)) / FRESHNESS_FILE
    assert json.loads(state.read_text())["sources"][0]["source"] == "campaign_daily_sends"

    lines = demo_summary(report.bi_path or "").splitlines()
    assert lines[-4] == "Sources: 3/6 fresh"
    assert lines[-3].startswith("  campaign_stats: error") and lines[-1].startswith("  workspaces: warn")
    assert any(line.startswith("Of contacted recipients: reply rate ") for line in lines)


def test_a_table_never_loaded_is_said_to_be_so(tmp_path: Path) -> None:
    """A raw table without a row (its first load failed): dbt's newest synced_at is then 0001-01-01, which the
    summary printed as "last loaded 739949.7 days ago"."""
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    tables = (
        "workspaces",
        "campaign_recipients",
        "replies",
        "campaign_stats",
        "campaign_variants",
        "campaign_daily_sends",
    )
    _age(path, dict.fromkeys(tables, "5 minute"))
    with duckdb.connect(str(path)) as con:
        con.execute('delete from "w".outreach.campaign_variants')
    report = build(path, publish=False)
    assert report.freshness is not None
    variants = next(s for s in report.freshness.sources if s.source == "campaign_variants")
    assert (variants.status, variants.max_loaded_at, variants.age_s) == ("error", None, None)
    assert (
        "  campaign_variants: error, never loaded (no row has a synced_at) (warn after 26 hours, error after 50 hours)"
        in (report.summary().splitlines())
    )
    assert "| campaign_variants | error |  |  |" in report.to_markdown()


def test_freshness_of_a_missing_column_is_reported_and_the_build_goes_on(
    tmp_path: Path,
) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    _age(
        path,
        {
            "workspaces": "5 minute",
            "campaign_recipients": "1 hour",
            "replies": "1 hour",
            "campaign_stats": "1 hour",
            "campaign_variants": "1 hour",
            "campaign_daily_sends": "1 hour",
        },
    )
    con = duckdb.connect(str(path))
    con.execute('alter table "w".outreach.replies drop column synced_at')
    con.close()
    out = subprocess.run([str(OUTREACH), "models", "--duckdb", str(path)], capture_output=True, text=True,
                         timeout=240, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "source freshness: 5/6 fresh" in out.stdout
    line = next(x for x in out.stdout.splitlines() if x.startswith("  replies: cannot check ("))
    assert "synced_at" in line
    # the project's on-run-end hook (the swap) ignores a freshness run: with a source in runtime error it
    # would otherwise discard every `__next` relation, and with none swap what it finds
    con = duckdb.connect(str(path))
    con.execute('create table "w".reporting.planted__next as select 1 as x')
    con.close()
    from models.build import ATOMIC_VARS
    from models.freshness import check_freshness

    assert check_freshness(resolve_target(path), dbt_vars=ATOMIC_VARS).worst == "runtime error"  # as build() runs it
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables() where schema_name = 'reporting'"
                                            ).fetchall()}  # fmt: skip
    finally:
        con.close()
    # 18 marts, 3 staging tables, the planted relation, and the alert incidents `outreach models` evaluated after
    # its build
    assert "planted__next" in tables and "alert_incidents" in tables and len(tables) == 23
