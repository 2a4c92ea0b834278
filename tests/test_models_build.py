"""The runner: order from the SQL, atomic builds, data tests that fail the command, docs that match."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from models.connect import bi_path_for
from models.docs import load_docs
from models.graph import MODELS_DIR, load_models
from models.runner import DataTestFailure, ModelBuildError, PublishError, WarehouseError, build, publish_bi
from models.synthetic import make_raw_warehouse

OUTREACH = Path(sys.executable).with_name("outreach")


def _snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return {
            t: con.execute(f"select * from reporting.{t} order by all").fetchall()
            for t in ("campaign_performance", "variant_performance", "recipient_funnel")
        }
    finally:
        con.close()


def _mart_columns(path: Path) -> dict[str, list[tuple[str, str]]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "select table_name, column_name, lower(data_type) from information_schema.columns "
            "where table_schema = 'reporting' order by table_name, ordinal_position"
        ).fetchall()
    finally:
        con.close()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = make_raw_warehouse(tmp_path_factory.mktemp("built") / "w.duckdb", recipients=2000)
    build(path)
    return path


def test_order_comes_from_the_sql() -> None:
    models = load_models()
    order = [m.name for m in models]
    for model in models:
        for dep in model.depends_on:
            assert order.index(dep) < order.index(model.name), f"{dep} must build before {model.name}"
    by_name = {m.name: m for m in models}
    assert by_name["workspace_overview"].depends_on >= {"campaign_performance", "mailbox_health"}
    assert by_name["stg_campaign_recipients"].raw_tables == {"campaign_recipients"}
    assert {m.name for m in models if m.kind == "table"} >= {
        "campaign_performance", "campaign_daily", "variant_performance", "mailbox_health",
        "reply_outcomes", "recipient_funnel", "workspace_overview",
    }
    # only staging reads raw tables
    assert all(not m.raw_tables for m in models if m.kind == "table")


def test_cycle_and_unknown_model_are_refused(tmp_path: Path) -> None:
    for folder in ("staging", "marts", "macros", "tests"):
        (tmp_path / folder).mkdir()
    (tmp_path / "marts" / "a.sql").write_text("select * from reporting.b")
    (tmp_path / "marts" / "b.sql").write_text("select * from reporting.a")
    with pytest.raises(ModelBuildError, match="cycle"):
        load_models(tmp_path)
    (tmp_path / "marts" / "b.sql").write_text("select * from reporting.nothing_builds_this")
    with pytest.raises(ModelBuildError, match="nothing_builds_this"):
        load_models(tmp_path)


def test_readme_documents_every_mart_column_and_type(built: Path) -> None:
    docs = load_docs()
    marts = {m.name for m in load_models() if m.kind == "table"}
    columns = _mart_columns(built)
    assert set(docs) == marts, "models/README.md must document exactly the mart tables"
    for table in marts:
        doc = docs[table]
        assert doc.grain.startswith("one row per"), f"{table}: grain line missing"
        documented = [(c, doc.types[c]) for c in doc.columns]
        assert documented == columns[table], f"models/README.md out of date for {table}"
        assert all(meaning.strip() for meaning in doc.columns.values())


def test_bi_file_holds_marts_with_comments_and_no_raw_data(built: Path) -> None:
    bi = bi_path_for(built)
    assert bi.name == "w_bi.duckdb" and bi.exists()
    con = duckdb.connect(str(bi), read_only=True)
    try:
        schemas = {r[0] for r in con.execute(
            "select distinct schema_name from duckdb_tables() where database_name = current_database()"
        ).fetchall()}
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        comment = con.execute(
            "select comment from duckdb_columns() where table_name = 'variant_performance' "
            "and column_name = 'is_winner'"
        ).fetchall()[0][0]
        rows = con.execute("select count(*) from reporting.campaign_performance").fetchall()[0][0]
    finally:
        con.close()
    assert schemas == {"reporting"}
    assert tables == {m.name for m in load_models() if m.kind == "table"}
    assert "p_value < 0.05" in comment
    assert rows == 8  # 2,000 recipients -> 8 campaigns, all current


def test_failing_data_test_fails_build_and_cli_and_keeps_previous_tables(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1500)
    ok = subprocess.run([str(OUTREACH), "models", "--duckdb", str(path)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert "data tests: 7/7 passed" in ok.stdout
    before = _snapshot(path)
    bi = bi_path_for(path)
    bi_stat = bi.stat()

    con = duckdb.connect(str(path))
    con.execute(
        "update outreach.campaign_variants set sent = sent + 5 "
        "where campaign_id = (select min(campaign_id) from outreach.campaign_stats) and \"index\" = 0"
    )
    con.close()

    with pytest.raises(DataTestFailure) as info:
        build(path)
    failing = {t.name: t.rows for t in info.value.failures}
    assert failing == {"variant_sent_adds_up": 1}
    assert "variant_sent_adds_up (1 rows)" in str(info.value)
    assert _snapshot(path) == before, "a failed build must leave the previous reporting tables intact"
    assert bi.stat().st_mtime_ns == bi_stat.st_mtime_ns and bi.stat().st_ino == bi_stat.st_ino

    bad = subprocess.run([str(OUTREACH), "models", "--duckdb", str(path)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0
    assert "variant_sent_adds_up" in bad.stderr and bad.stderr.startswith("error: ")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_broken_model_names_the_file_and_rolls_back(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    build(path, publish=False)
    before = _snapshot(path)
    models_dir = tmp_path / "models_copy"
    shutil.copytree(MODELS_DIR, models_dir, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    broken = models_dir / "marts" / "recipient_funnel.sql"
    broken.write_text(broken.read_text().replace("count(opened_at)", "count(no_such_column)"))
    # make an earlier model differ, to prove it is rolled back too
    perf = models_dir / "marts" / "campaign_performance.sql"
    perf.write_text(perf.read_text().replace("totals.campaign_name,", "'changed' as campaign_name,"))
    with pytest.raises(ModelBuildError) as info:
        build(path, models_dir=models_dir)
    assert "marts/recipient_funnel.sql" in str(info.value) and "no_such_column" in str(info.value)
    assert _snapshot(path) == before
    assert not bi_path_for(path).exists()


def test_missing_raw_column_and_table_still_build(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000, include_events=False)
    con = duckdb.connect(str(path))
    con.execute("alter table outreach.campaigns drop column campaign_type")
    con.execute("alter table outreach.replies drop column body")
    con.close()
    report = build(path)
    assert any("outreach.events is missing" in w for w in report.warnings)
    assert "warning: raw table outreach.events is missing" in report.summary()
    con = duckdb.connect(str(path), read_only=True)
    try:
        types = con.execute("select count(*), count(campaign_type) from reporting.campaign_performance").fetchall()
        events = con.execute("select count(*) from reporting.stg_events").fetchall()[0][0]
    finally:
        con.close()
    assert types == [(6, 0)] and events == 0  # at least 6 campaigns; the column reads as null


def test_warehouse_errors_name_cause_and_fix(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="run `outreach sync` first"):
        build(tmp_path / "nope.duckdb")
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    with pytest.raises(WarehouseError, match="no `outreach` tables"):
        build(empty)
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    held = duckdb.connect(str(path))
    try:
        with pytest.raises(WarehouseError, match="this process already has it open"):
            build(path)
    finally:
        held.close()
    # another process writing (a sync) holds the lock: a clear error, not a hang
    writer = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ok', flush=True); "
         "sys.stdin.readline()", str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ok"
        with pytest.raises(WarehouseError, match="retry when the sync finishes"):
            build(path)
    finally:
        writer.kill()
        writer.wait()


def test_report_renders_summary_and_markdown(built: Path) -> None:
    report = build(built, publish=False)
    assert report.passed and report.bi_path is None
    assert [t.name for t in report.tests] == sorted(t.name for t in report.tests)
    md = report.to_markdown()
    assert "| campaign_performance | table | 8 |" in md and "| funnel_adds_up | 0 | pass |" in md
    assert "BI file: not published" in report.summary()
    # publishing on its own (what a caller does after build(publish=False)) replaces the file
    bi = bi_path_for(built)
    inode = bi.stat().st_ino
    assert publish_bi(built) == bi and bi.stat().st_ino != inode
    assert not list(built.parent.glob(".w_bi.duckdb.*")), "no temporary file left behind"
    with pytest.raises(WarehouseError, match="does not exist"):
        publish_bi(built.parent / "missing.duckdb")


def test_publish_failure_is_a_model_error_and_keeps_old_bi_file(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=600)
    build(path)
    bi = bi_path_for(path)
    inode = bi.stat().st_ino
    # occupy the temporary file's name with a directory, so writing the new BI file fails
    blocker = bi.with_name(f".{bi.name}.{os.getpid()}.tmp")
    blocker.mkdir()
    (blocker / "x").write_text("")
    with pytest.raises(PublishError, match="previous BI file is untouched"):
        build(path)
    assert bi.stat().st_ino == inode
