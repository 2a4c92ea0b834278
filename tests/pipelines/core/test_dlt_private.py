"""Pins the private dlt API this package relies on, kept in two small modules: fails loudly, naming
dlt, when an upgrade changes it. `pipelines/core/dlt_private.py` (dlt's trace log of resolved config) and
`pipelines/warehouse/duckdb_destination.py` (dlt's DuckDB classes: three-part names, the rowid de-duplication)."""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from typing import Any

import dlt
import pytest
from dlt.pipeline.exceptions import PipelineStepFailed

from pipelines.warehouse.destination import make_pipeline, warehouse_target


def _traces() -> Any:
    from dlt.common.configuration.utils import get_resolved_traces

    return get_resolved_traces()


def test_untraced_config_stops_dlt_logging_resolved_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipelines.core.dlt_private import untraced_config

    monkeypatch.setenv("SOURCES__OUTREACH__PROBE_SETTING", "x")
    traces = _traces()
    assert hasattr(traces, "logging_enabled") and hasattr(traces, "all_traces"), (
        f"dlt {dlt.__version__} changed TraceLogContext: update pipelines/core/dlt_private.py"
    )
    traces.clear()
    assert dlt.config.get("sources.outreach.probe_setting") == "x"
    logged = len(traces.all_traces)
    assert logged >= 1, f"dlt {dlt.__version__} no longer logs resolved config: pipelines/core/dlt_private.py may go"
    with untraced_config():
        assert dlt.config.get("sources.outreach.probe_setting") == "x"
        assert traces.logging_enabled is False
    assert len(traces.all_traces) == logged, f"dlt {dlt.__version__}: untraced_config no longer stops trace logging"
    assert traces.logging_enabled is True


DLT = f"dlt {dlt.__version__}"
WHERE = "pipelines/warehouse/duckdb_destination.py relies on it: adapt that module"


def test_the_private_dlt_classes_and_methods_it_overrides_still_exist() -> None:
    from dlt.destinations.impl.duckdb.duck import DuckDbClient
    from dlt.destinations.impl.duckdb.sql_client import DuckDbSqlClient
    from dlt.destinations.sql_jobs import SqlMergeFollowupJob

    for cls, name in (
        (DuckDbSqlClient, "catalog_name"),
        (DuckDbSqlClient, "warn_if_catalog_equals_dataset_name"),
        (DuckDbClient, "_create_merge_followup_jobs"),
        (SqlMergeFollowupJob, "gen_select_from_dedup_sql"),
        (SqlMergeFollowupJob, "from_table_chain"),
    ):
        assert hasattr(cls, name), f"{DLT}: {cls.__name__}.{name} is gone; {WHERE}"
    params = list(inspect.signature(SqlMergeFollowupJob.gen_select_from_dedup_sql).parameters)
    assert params == [
        "table_name",
        "primary_keys",
        "columns",
        "dedup_sort",
        "condition",
        "condition_columns",
        "skip_dedup",
    ], f"{DLT}: SqlMergeFollowupJob.gen_select_from_dedup_sql({', '.join(params)}) changed; {WHERE}"
    client_init = list(inspect.signature(DuckDbSqlClient.__init__).parameters)
    assert client_init[1:] == ["dataset_name", "staging_dataset_name", "credentials", "capabilities"], (
        f"{DLT}: DuckDbSqlClient({', '.join(client_init[1:])}) changed; {WHERE}"
    )


def test_a_file_named_like_the_dataset_loads_merges_and_dedups_with_the_custom_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """outreach.duckdb + dataset outreach: dlt's own names would be ambiguous; ours are three-part. Staged
    rows with a repeated key merge into one row (the rowid de-duplication), and dlt's warning about the
    name clash is not raised (silenced at its source, no log filter)."""
    dlt_logger = logging.getLogger("dlt")  # dlt's logger does not propagate: listen on it directly
    dlt_logger.addHandler(caplog.handler)
    try:
        _check_three_part_names(tmp_path, caplog)
    finally:
        dlt_logger.removeHandler(caplog.handler)


def _check_three_part_names(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # control: dlt's own DuckDB destination on such a file warns (and fails), so the capture below works
    plain = dlt.pipeline(
        "plain_check",
        destination=dlt.destinations.duckdb(str(tmp_path / "ds.duckdb")),
        dataset_name="ds",
        pipelines_dir=str(tmp_path / "plain"),
    )
    with pytest.raises(PipelineStepFailed):
        plain.run([{"id": 1}], table_name="t", write_disposition="merge", primary_key="id")
    assert "identical to the dataset name" in caplog.text, "the control did not capture dlt's warning"
    caplog.clear()

    warehouse = warehouse_target(duckdb_path=tmp_path / "outreach.duckdb", destination="duckdb")
    warehouse.create_if_missing()
    pipeline = make_pipeline("outreach_private_check", warehouse, tmp_path / "p")
    rows = [{"id": 1, "v": "a"}, {"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    for _ in range(2):
        info = pipeline.run(rows, table_name="t", write_disposition="merge", primary_key="id")
        info.raise_on_failed_jobs()
    with pipeline.sql_client() as client:
        name = client.make_qualified_table_name("t")
        assert name.count(".") == 2 and name.startswith('"outreach"."outreach"'), f"{DLT}: names {name}; {WHERE}"
        assert sorted(client.execute_sql(f"select id, v from {name}")) == [(1, "a"), (2, "b")], (
            f"{DLT}: the merge kept duplicate staged rows; {WHERE}"
        )
    assert "identical to the dataset name" not in caplog.text, f"{DLT} warns about the name clash again; {WHERE}"
