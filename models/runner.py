"""Build the `reporting` schema from the raw `outreach` tables, run the data tests, publish the BI file.

The whole build (macros, staging views, mart tables, data tests) runs in ONE DuckDB
transaction, each model as its own statement inside it: the first failing model or any
failing data test rolls everything back, so the previous reporting tables stay exactly
as they were, and the BI file is only republished after a commit.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import duckdb

from models.connect import open_warehouse, resolve_path
from models.errors import DataTestFailure, ModelBuildError, ModelError, PublishError, WarehouseError
from models.graph import MODELS_DIR, RAW, REPORTING, Model, data_test_files, load_models, macro_files, quote_ident
from models.publish import publish_bi
from models.report import BuildReport, DataTestResult, ModelResult
from models.summary import demo_figures, demo_summary

__all__ = [
    "BuildReport",
    "DataTestFailure",
    "ModelBuildError",
    "ModelError",
    "PublishError",
    "WarehouseError",
    "build",
    "demo_figures",
    "demo_summary",
    "publish_bi",
]

log = logging.getLogger(__name__)


def build(
    duckdb_path: str | Path | None = None,
    *,
    publish: bool = True,
    models_dir: Path = MODELS_DIR,
    memory_limit: str | None = None,
) -> BuildReport:
    """Build every model and run every data test in one transaction; publish the BI file on success.

    Raises ModelBuildError (a model failed), DataTestFailure (a test returned rows) or
    WarehouseError (file missing, not synced, locked). On any of them nothing changed.
    """
    path = resolve_path(duckdb_path)
    models = load_models(models_dir)
    report = BuildReport(duckdb_path=path)
    started = time.perf_counter()
    con = open_warehouse(path, memory_limit=memory_limit)
    try:
        raw_tables = _existing_tables(con, RAW)
        if not raw_tables:
            raise WarehouseError(f"warehouse {path} has no `{RAW}` tables: run `outreach sync` first")
        con.execute("begin transaction")
        try:
            _build_all(con, models, raw_tables, report, models_dir)
            _run_data_tests(con, data_test_files(models_dir), report)
            failures = [t for t in report.tests if not t.passed]
            if failures:
                raise DataTestFailure(failures, report)
            con.execute("commit")
        except BaseException:
            _rollback(con)
            raise
        report.seconds = time.perf_counter() - started
        if publish:
            t0 = time.perf_counter()
            try:
                report.bi_path = publish_bi(path, con=con)
            except (duckdb.Error, OSError) as exc:
                raise PublishError(
                    f"reporting built, but publishing the BI file failed: {_reason(exc)} "
                    "(the previous BI file is untouched; check disk space and permissions, then rerun)"
                ) from exc
            report.publish_seconds = time.perf_counter() - t0
    finally:
        con.close()
    log.info("models built in %.2fs (%d models, %d tests)", report.seconds, len(report.models), len(report.tests))
    return report


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back, never masking the error that got us here (a fatal DuckDB error may already have)."""
    try:
        con.execute("rollback")
    except duckdb.Error as exc:
        log.warning("rollback after a failed build reported: %s", _reason(exc))


def _existing_tables(con: duckdb.DuckDBPyConnection, schema: str) -> dict[str, str]:
    """name -> 'BASE TABLE' or 'VIEW' for one schema of the warehouse's own catalog."""
    rows = con.execute(
        "select table_name, table_type from information_schema.tables "
        "where table_schema = ? and table_catalog = current_database()",
        [schema],
    ).fetchall()
    return {name.lower(): kind for name, kind in rows}


def _build_all(
    con: duckdb.DuckDBPyConnection,
    models: list[Model],
    raw_tables: dict[str, str],
    report: BuildReport,
    models_dir: Path,
) -> None:
    con.execute(f"create schema if not exists {REPORTING}")
    for macro in macro_files(models_dir):
        try:
            con.execute(macro.read_text())
        except duckdb.Error as exc:
            raise ModelBuildError(_rel(macro), _reason(exc)) from exc
    _drop_stale(con, {m.name for m in models})
    existing = _existing_tables(con, REPORTING)
    for model in models:
        sql = model.sql
        for raw in sorted(model.raw_tables - raw_tables.keys()):
            # The sync never loaded this table (e.g. no webhook spool yet): build from the contract alone.
            report.warnings.append(f"raw table {RAW}.{raw} is missing; {model.name} is empty until a sync loads it")
            sql = re.sub(rf"\b{RAW}\.{raw}\b", "(select * from contract)", sql, flags=re.IGNORECASE)
        _build_one(con, model, sql, f"{REPORTING}.{model.name}", existing.get(model.name), report)


def _build_one(
    con: duckdb.DuckDBPyConnection,
    model: Model,
    sql: str,
    target: str,
    existing_kind: str | None,
    report: BuildReport,
) -> None:
    started = time.perf_counter()
    try:
        if existing_kind == "VIEW" and model.kind == "table":
            con.execute(f"drop view {target}")
        elif existing_kind == "BASE TABLE" and model.kind == "view":
            con.execute(f"drop table {target}")
        con.execute(f"create or replace {model.kind} {target} as\n{sql}\n")
        rows = None
        if model.kind == "table":
            rows = int(con.execute(f"select count(*) from {target}").fetchall()[0][0])
    except duckdb.Error as exc:
        raise ModelBuildError(_rel(model.path), _reason(exc)) from exc
    seconds = time.perf_counter() - started
    report.models.append(ModelResult(name=model.name, kind=model.kind, seconds=seconds, rows=rows))
    log.debug("built %s %s in %.2fs", model.kind, target, seconds)


def _drop_stale(con: duckdb.DuckDBPyConnection, names: set[str]) -> None:
    """Drop reporting objects whose model file is gone, so the BI file never shows dead tables."""
    for name, kind in _existing_tables(con, REPORTING).items():
        if name not in names:
            con.execute(f"drop {'view' if kind == 'VIEW' else 'table'} if exists {REPORTING}.{quote_ident(name)}")


def _run_data_tests(con: duckdb.DuckDBPyConnection, tests: list[Path], report: BuildReport) -> None:
    for path in tests:
        sql = path.read_text().strip().rstrip(";")
        started = time.perf_counter()
        try:
            rows = int(con.execute(f"select count(*) from (\n{sql}\n) as failing").fetchall()[0][0])
            sample = con.execute(f"select * from (\n{sql}\n) as failing limit 5").fetchall() if rows else []
        except duckdb.Error as exc:
            raise ModelBuildError(_rel(path), _reason(exc)) from exc
        result = DataTestResult(name=path.stem, rows=rows, seconds=time.perf_counter() - started, sample=sample)
        report.tests.append(result)
        if not result.passed:
            log.info("data test %s failed with %d rows, e.g. %s", path.stem, rows, sample[:2])


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:500]


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(MODELS_DIR.parent))
    except ValueError:
        return str(path)
