"""The dbt project as `outreach models` runs it: shape, docs, all-or-nothing builds, the BI file, errors."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from process_output import run_on_a_terminal

from devtools.synthetic import make_raw_warehouse
from models import PROJECT_DIR
from models.build import build
from models.dbt_invoke import invoke
from models.errors import DataTestFailure, ModelBuildError, PublishError, WarehouseError
from models.progress import BuildProgress
from models.publish import publish_bi
from models.settings import bi_path_for, dbt_state_dir, resolve_target

pytestmark = pytest.mark.timeout(300)

BIN = Path(sys.executable).parent
OUTREACH = BIN / "outreach"
MARTS = {
    "campaign_performance", "campaign_daily", "variant_performance", "mailbox_health", "mailbox_daily",
    "reply_outcomes", "recipient_funnel", "followup_steps", "workspace_overview", "lead_engagement",
    # the engagement marts
    "lead_timeline", "campaign_event_daily", "campaign_weekly", "launch_cohorts", "send_time_performance",
    "company_rollup", "workspace_credits_daily",
    "reply_classes",  # the reply-class map as a table (the alerts' webhook path)
}  # fmt: skip
#: staging models that read another staging model, so tables (a view may not: macros/atomic_build.sql)
STAGING_TABLES = {"stg_campaigns", "stg_email_accounts", "stg_service_clock"}
#: marts built incrementally (models/macros/incremental.sql)
INCREMENTAL = {"lead_engagement", "lead_timeline"}
#: the contract of docs/DESIGN.md
DESIGN_TABLES = {
    "campaign_performance", "campaign_daily", "variant_performance", "mailbox_health", "reply_outcomes",
    "recipient_funnel", "workspace_overview",
}  # fmt: skip


HOLD_FOR_WRITING = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('ok', flush=True); sys.stdin.readline()"


def _snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as w (read_only)")
        return {t: con.execute(f"select * from w.reporting.{t} order by all").fetchall() for t in sorted(MARTS)}
    finally:
        con.close()


def _reporting_objects(path: Path) -> dict[str, str]:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as w (read_only)")
        rows = con.execute(
            "select table_name, table_type from information_schema.tables "
            "where table_catalog = 'w' and table_schema = 'reporting'"
        ).fetchall()
    finally:
        con.close()
    return dict(rows)


@pytest.fixture(scope="module")
def manifest(built: tuple[Path, subprocess.CompletedProcess[str]]) -> dict[str, Any]:
    """The project's manifest.json, as `dbt parse` writes it for the built warehouse (a build writes none)."""
    target = resolve_target(built[0])
    assert invoke(["parse"], target, write_json=True).success
    data: dict[str, Any] = json.loads((dbt_state_dir(target) / "target" / "manifest.json").read_text())
    return data


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A synthetic warehouse built by the command line, as a user runs it in a terminal (stderr one)."""
    path = make_raw_warehouse(tmp_path_factory.mktemp("built") / "w.duckdb", recipients=2000)
    return path, run_on_a_terminal([str(OUTREACH), "models", "--duckdb", str(path)], timeout=240)


def _copy_of_built(built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> Path:
    """The built warehouse with its BI file and dbt state, copied: a test that changes a warehouse after a
    successful build starts from this one instead of paying for a build of its own."""
    path, out = built
    assert out.returncode == 0, out.stderr
    shutil.copytree(path.parent, tmp_path / "built")
    return tmp_path / "built" / path.name


def test_command_builds_every_mart_and_prints_a_summary(
    built: tuple[Path, subprocess.CompletedProcess[str]], manifest: dict[str, Any]
) -> None:
    path, out = built
    assert out.returncode == 0, out.stderr
    assert "15 staging models, 18 mart tables built" in out.stdout
    tests_line = next(line for line in out.stdout.splitlines() if line.startswith("data tests:"))
    passed, total = tests_line.split()[2].split("/")
    assert passed == total == str(sum(n["resource_type"] == "test" for n in manifest["nodes"].values())), tests_line
    # the terminal showed the build as it ran: its stages, and dbt's nodes done of all of them
    nodes = sum(n["resource_type"] in ("model", "test") for n in manifest["nodes"].values())
    for shown in ("outreach models: parsing the project", f"/{nodes} nodes", "outreach models: publishing the BI file"):
        assert shown in out.stderr, (shown, out.stderr[-2000:])
    assert not (dbt_state_dir(resolve_target(path)) / "target" / "run_results.json").exists()
    assert "FAILED" not in out.stdout and f"BI file: {bi_path_for(path)}" in out.stdout
    objects = _reporting_objects(path)
    # and the alert incidents, which `outreach models` evaluates after the build (alerts/store.py)
    assert {t for t, kind in objects.items() if kind == "BASE TABLE"} == MARTS | STAGING_TABLES | {"alert_incidents"}
    assert not [t for t in objects if t.endswith("__next")], "no scratch relation is left behind"
    # the process released the file: this process may open it for writing again
    duckdb.connect(str(path)).close()


def test_project_shape_staging_reads_sources_only_and_views_never_read_models(manifest: dict[str, Any]) -> None:
    nodes = manifest["nodes"]
    models = {n["name"]: n for n in nodes.values() if n["resource_type"] == "model"}
    for name, node in models.items():
        kind = node["config"]["materialized"]
        reads_sources = any(d.startswith("source.") for d in node["depends_on"]["nodes"])
        if name.startswith("stg_"):
            assert node["original_file_path"].startswith("staging/")
            assert kind == ("table" if name in STAGING_TABLES else "view"), name
        else:
            assert kind == ("incremental" if name in INCREMENTAL else "table"), name
            assert node["original_file_path"].startswith("marts/"), name
            assert not reads_sources, f"{name}: only staging reads sources"
        if kind == "view":
            # a view is renamed into place after the build: it must not name another model
            assert all(d.startswith("source.") for d in node["depends_on"]["nodes"]), name
    tables = {n for n, node in models.items() if node["config"]["materialized"] in ("table", "incremental")}
    assert tables == MARTS | STAGING_TABLES
    rules = [n for n in nodes.values() if (n.get("test_metadata") or {}).get("name") == "model_rules"]
    assert {rule["attached_node"].split(".")[-1] for rule in rules} >= MARTS  # every mart's keys are tested
    for rule in rules:
        # a relationship's parent is a dependency of the test, as with dbt's own `relationships`: built before it
        for link in rule["test_metadata"]["kwargs"].get("relationships", []):
            parent = link["to"].split("'")[1]
            assert f"model.outreach.{parent}" in rule["depends_on"]["nodes"], (rule["name"], parent)
    assert DESIGN_TABLES <= MARTS
    sources = manifest["sources"]
    assert {s["name"] for s in sources.values()} >= {
        "workspaces", "campaigns", "campaign_recipients", "campaign_stats", "campaign_variants",
        "campaign_daily_sends", "replies", "email_accounts", "webhook_event_types", "events",
    }  # fmt: skip
    for source in sources.values():
        assert all(c["data_type"] for c in source["columns"].values()), source["name"]
    synced = next(s for s in sources.values() if s["name"] == "campaign_recipients")
    assert synced["loaded_at_field"] == "synced_at"
    assert synced["freshness"]["warn_after"] == {"count": 26, "period": "hour"}


def test_yml_documents_every_mart_column_with_its_meaning(
    built: tuple[Path, subprocess.CompletedProcess[str]], manifest: dict[str, Any]
) -> None:
    path = built[0]
    nodes = manifest["nodes"]
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as w (read_only)")
        actual = con.execute(
            "select table_name, list(column_name order by column_index) from duckdb_columns() "
            "where database_name = 'w' and schema_name = 'reporting' group by table_name"
        ).fetchall()
    finally:
        con.close()
    for table, columns in actual:
        if table == "alert_incidents":  # the alerts' own table, not a dbt model: alerts/store.py comments it
            continue
        node = next(n for n in nodes.values() if n["name"] == table)
        assert node["description"].startswith("One row per"), f"{table}: the description must state the grain"
        documented = list(node["columns"])
        assert documented == columns, f"{table}: yml columns differ from the table"
        assert all(len(c["description"]) > 5 for c in node["columns"].values()), table


def test_bi_file_holds_the_marts_with_comments_in_the_old_storage_format(
    built: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    bi = bi_path_for(built[0])
    assert bi.name == "w_bi.duckdb"
    header = bi.read_bytes()[:20]
    assert header[8:12] == b"DUCK"
    assert struct.unpack("<Q", header[12:20])[0] == 64, "storage v1.0.0 (what DuckDB 1.1+ reads) is number 64"
    con = duckdb.connect(str(bi), read_only=True)
    try:
        schemas = {
            r[0]
            for r in con.execute(
                "select distinct schema_name from duckdb_tables() where database_name = current_database()"
            ).fetchall()
        }
        tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
        comment = con.execute(
            "select comment from duckdb_columns() where table_name = 'variant_performance' "
            "and column_name = 'is_winner'"
        ).fetchall()[0][0]
        grain = con.execute("select comment from duckdb_tables() where table_name = 'mailbox_daily'").fetchall()[0][0]
        rows = con.execute("select count(*) from reporting.campaign_performance").fetchall()[0][0]
    finally:
        con.close()
    assert schemas == {"reporting"} and tables == MARTS | {"alert_incidents"}
    assert "adjusted_p_value is below 0.05" in comment and grain.startswith("One row per mailbox and UTC day")
    assert rows == 8  # 2,000 recipients -> 8 campaigns, all current


def test_failing_data_test_changes_nothing_and_the_command_names_it(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    path = _copy_of_built(built, tmp_path)
    before, bi = _snapshot(path), bi_path_for(path)
    bi_stat = bi.stat()
    con = duckdb.connect(str(path))
    bad_campaign = con.execute("select min(campaign_id) from outreach.campaign_stats").fetchall()[0][0]
    con.execute(f"update outreach.campaign_variants set sent = sent + 5 where campaign_id = '{bad_campaign}' "
                "and \"index\" = 0")  # fmt: skip
    con.close()

    out = subprocess.run(
        [str(OUTREACH), "models", "--duckdb", str(path)], capture_output=True, text=True, timeout=240, check=False
    )
    assert out.returncode == 1
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith(f"error: test variant_sent_adds_up: 1 row (campaign_id={bad_campaign} count_sent=")
    assert "variant_sent=" in errors[0]
    assert "unchanged" in out.stderr.splitlines()[-1]
    assert "1 FAILED" in out.stdout and "BI file: not published" in out.stdout
    assert _snapshot(path) == before, "the previous reporting tables stay exactly as they were"
    assert bi.stat().st_ino == bi_stat.st_ino and bi.stat().st_mtime_ns == bi_stat.st_mtime_ns
    assert not [t for t in _reporting_objects(path) if t.endswith("__next")]

    with pytest.raises(DataTestFailure) as info:
        build(path)
    assert info.value.problems[0].startswith("test variant_sent_adds_up: 1 row")
    assert "unchanged" in str(info.value) and "\n" not in str(info.value)


def test_broken_model_names_itself_and_changes_nothing(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    path = _copy_of_built(built, tmp_path)
    before, bi_inode = _snapshot(path), bi_path_for(path).stat().st_ino
    project = tmp_path / "project"
    shutil.copytree(PROJECT_DIR, project, ignore=shutil.ignore_patterns("__pycache__", "*.py", "target", "logs"))
    funnel = project / "marts" / "recipient_funnel.sql"
    funnel.write_text(funnel.read_text().replace("count(opened_at)", "count(no_such_column)"))
    # an earlier model that builds fine and differs, to prove it is not swapped in either
    perf = project / "marts" / "campaign_performance.sql"
    perf.write_text(perf.read_text().replace("timed.campaign_name,", "'changed' as campaign_name,"))
    with pytest.raises(ModelBuildError) as info:
        build(path, project_dir=project)
    line = next(p for p in info.value.problems if p.startswith("model recipient_funnel:"))
    assert "no_such_column" in line
    assert _snapshot(path) == before
    assert bi_path_for(path).stat().st_ino == bi_inode
    assert not [t for t in _reporting_objects(path) if t.endswith("__next")]


def test_missing_raw_column_and_table_still_build_with_a_warning(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000, include_events=False)
    con = duckdb.connect(str(path))
    con.execute("alter table outreach.campaigns drop column campaign_type")
    con.execute("alter table outreach.replies drop column body")
    con.close()
    report = build(path)
    assert "raw table outreach.events does not exist yet: stg_events is empty until a sync loads it" in report.warnings
    assert "warning: raw table outreach.events does not exist yet" in report.summary()
    con = duckdb.connect(str(path), read_only=True)
    try:
        types = con.execute("select count(*), count(campaign_type) from reporting.campaign_performance").fetchall()
    finally:
        con.close()
    assert types == [(6, 0)]  # at least 6 campaigns; the column reads as null


def test_warehouse_errors_are_one_line_with_cause_and_fix(tmp_path: Path) -> None:
    with pytest.raises(WarehouseError, match="does not exist: run `outreach sync` first"):
        build(tmp_path / "nope.duckdb")
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    with pytest.raises(WarehouseError, match="has no `outreach` tables: run `outreach sync` first"):
        build(empty)
    junk = tmp_path / "junk.duckdb"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(WarehouseError, match="is not a DuckDB database file"):
        build(junk)
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    held = duckdb.connect(str(path))
    try:
        with pytest.raises(WarehouseError, match="close other connections to it in this process"):
            build(path)
    finally:
        held.close()
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD_FOR_WRITING, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ok"
        with pytest.raises(WarehouseError, match="another process holds it for writing") as info:
            build(path)
        assert "\n" not in str(info.value)
        out = subprocess.run([str(OUTREACH), "models", "--duckdb", str(path)], capture_output=True, text=True,
                             timeout=120, check=False)  # fmt: skip
        assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1
        assert out.stderr.startswith("error: cannot open warehouse")
    finally:
        writer.kill()
        writer.wait()


def test_publish_cleans_a_killed_publish_and_a_failure_keeps_the_old_file(
    built: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    path = _copy_of_built(built, tmp_path)
    bi = bi_path_for(path)
    leftovers = [bi.with_name(f".{bi.name}.4242.tmp"), bi.with_name(f".{bi.name}.4242.tmp.wal"), Path(f"{bi}.wal")]
    for leftover in leftovers:
        leftover.write_bytes(b"left by a killed publish")
    inode = bi.stat().st_ino
    published, rows = publish_bi(path)
    assert published == bi and bi.stat().st_ino != inode and rows["campaign_performance"] == 8
    assert not [p for p in leftovers if p.exists()], "leftovers of a killed publish are removed"
    assert not list(path.parent.glob(".w_bi.duckdb.*")), "no temporary file left behind"
    # a directory where the temporary file goes: writing fails, the old BI file stays
    blocker = bi.with_name(f".{bi.name}.{os.getpid()}.tmp")
    blocker.mkdir()
    inode = bi.stat().st_ino
    with pytest.raises(PublishError, match="previous BI file is untouched"):
        publish_bi(path)
    assert bi.stat().st_ino == inode


def test_release_of_dbt_duckdb_fails_loudly_if_dbt_duckdb_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    from models.duckdb_release import DbtDuckdbChanged, release_duckdb

    release_duckdb()  # nothing open: a no-op
    monkeypatch.delattr(DuckDBConnectionManager, "_ENV")
    with pytest.raises(DbtDuckdbChanged, match="dbt-duckdb changed"):
        release_duckdb()


def test_analyst_runs_dbt_build_in_models_with_the_profile_reading_env_vars(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=800)
    relative = os.path.relpath(path, PROJECT_DIR.parent)  # relative paths are taken from the repository root
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__OUTREACH__", "DBT_"))}
    env["SOURCES__OUTREACH__DUCKDB_PATH"] = relative
    out = subprocess.run([str(BIN / "dbt"), "build"], cwd=PROJECT_DIR, env=env, capture_output=True, text=True,
                         timeout=240, check=False)  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:]
    assert "Completed successfully" in out.stdout
    assert "raw table outreach.events" not in out.stdout  # the synthetic warehouse has events
    assert {t for t, kind in _reporting_objects(path).items() if kind == "BASE TABLE"} == MARTS | STAGING_TABLES
    assert not (PROJECT_DIR / "data").exists(), "the relative path must not create a warehouse inside models/"


def test_docs_command_writes_the_static_site(built: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    path = built[0]
    # the page a symbolic link names (a site's link into its release) is written through the link, which stays:
    # the write renamed its file over the link
    site = path.parent / "docs" / "index.html"
    site.parent.mkdir()
    site.symlink_to(path.parent / "release" / "index.html")
    out = subprocess.run(
        [str(OUTREACH), "docs", "--duckdb", str(path)], capture_output=True, text=True, timeout=240, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"docs: {site} (open it in a browser)"
    assert site.is_symlink() and (path.parent / "release" / "index.html").is_file()
    html = site.read_text()
    for needle in ("campaign_performance", "reply_rate_per_delivered_message", "One row per campaign and UTC day",
                   "count_campaigns_other_status", "Metric dictionary"):  # fmt: skip
        assert needle in html, needle
    assert '"catalog"' in html or "catalog" in html
    # `--out` as every path flag reads it (flows/cli_common.path_option): a blank one named a folder of spaces
    blank = subprocess.run(
        [str(OUTREACH), "docs", "--duckdb", str(path), "--out", "   "], capture_output=True, text=True, check=False
    )
    assert (blank.returncode, blank.stderr) == (
        1,
        "error: --out is blank: give a path, or leave it out for the default\n",
    )


def test_a_build_parses_the_project_once_and_reports_its_models_and_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbt loads the project (its saved parse, checked against every file) once per build, not once per command;
    the build's report lists every model and data test, in markdown too; its progress followed every stage and
    counted every node dbt ran."""
    import dbt.cli.main as dbt_main

    commands: list[tuple[str, bool]] = []
    loads: list[str] = []

    class Counting(dbt_main.dbtRunner):
        def __init__(self, manifest: object = None, callbacks: list[object] | None = None) -> None:
            def on_event(event: object) -> None:
                if event.info.name == "StateCheckVarsHash":  # type: ignore[attr-defined]  # every project load
                    loads.append(event.info.name)  # type: ignore[attr-defined]

            super().__init__(manifest=manifest, callbacks=[*(callbacks or []), on_event])  # type: ignore[arg-type]
            self._given = manifest is not None

        def invoke(self, args: list[str], **kwargs: object) -> dbt_main.dbtRunnerResult:
            commands.append((args[0], self._given))
            return super().invoke(args, **kwargs)

    class Stages(BuildProgress):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def set_stage(self, stage: str) -> None:
            self.seen.append(stage)
            super().set_stage(stage)

    monkeypatch.setattr(dbt_main, "dbtRunner", Counting)
    progress = Stages()
    report = build(make_raw_warehouse(tmp_path / "w.duckdb", recipients=300), publish=False, progress=progress)
    assert report.passed and report.freshness is not None and report.freshness.sources
    assert commands == [("parse", False), ("source", True), ("build", True)]
    assert len(loads) == 1
    assert progress.seen == [
        "checking the warehouse", "A/B statistics", "parsing the project", "source freshness", "building",
    ]  # fmt: skip
    assert progress.done == progress.total == len(report.models) + len(report.tests) and not progress.running
    assert progress.line().startswith(f"building: {progress.total}/{progress.total} nodes · ")

    assert report.bi_path is None and "BI file: not published" in report.summary()
    md = report.to_markdown()
    assert "| campaign_performance | table |" in md and "| funnel_adds_up | 0 | pass |" in md
    assert {t.name for t in report.tests} >= {
        "funnel_adds_up", "variant_sent_adds_up", "single_winner", "rates_in_range", "reply_rates_nested",
        "campaign_workspace_matches_stats", "primary_rates_match_service", "funnel_narrows", "durations_not_negative",
        "daily_sends_add_up", "rows_inside_grain", "no_uncoerced_variants",
    }  # fmt: skip


def test_source_freshness_follows_the_schedules(tmp_path: Path) -> None:
    """`dbt source freshness`: workspaces (every quick sync) warn after 45 minutes; full-sync tables after 26 hours."""
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    con = duckdb.connect(str(path))
    for table in ("campaign_recipients", "replies", "campaign_variants"):  # the synthetic data leaves them out
        con.execute(f"alter table outreach.{table} add column if not exists synced_at timestamptz")
    con.execute("update outreach.workspaces set synced_at = now() - interval 1 hour")  # one quick run missed
    con.execute("update outreach.campaign_recipients set synced_at = now() - interval 2 hour")  # fresh enough
    con.execute("update outreach.replies set synced_at = now() - interval 30 hour")  # last night's full missed
    con.execute("update outreach.campaign_stats set synced_at = now() - interval 60 hour")  # two nights missed
    con.execute("update outreach.campaign_variants set synced_at = now() - interval 5 minute")
    con.close()
    outcome = invoke(["source", "freshness"], resolve_target(path), target_dir="freshness_target")
    status = {r.node.name: str(r.status) for r in outcome.results}
    assert status["workspaces"] == "warn"
    assert status["campaign_recipients"] == "pass" and status["campaign_variants"] == "pass"
    assert status["replies"] == "warn" and status["campaign_stats"] == "error"
    assert "campaigns" not in status and "email_accounts" not in status  # scd2: no threshold
