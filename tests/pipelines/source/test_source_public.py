"""`from pipelines import outreach`: the dlt source a dlt user runs into their own pipeline.

Against a real sandbox over loopback, into a real DuckDB file and real parquet files: the rows against
what our own sync (`run_sync`) loads for the same workspace, a second run that reads only what changed, a
failure that advances nothing, bodies never wiped, and the key nowhere on disk. The README's block is run
by test_source_public_readme.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dlt
import duckdb
import pytest
from dlt.pipeline.exceptions import PipelineStepFailed
from test_sync_support import admin_keys, sandbox_sync_args

from pipelines import outreach
from pipelines.core import constants
from pipelines.core.errors import AuthError, ConfigError, ForbiddenError
from pipelines.source.dlt_state import StateReader
from pipelines.source.stored import WarehouseReader
from pipelines.sync.edge import run_sync
from pipelines.warehouse.diagnose import root_cause

#: columns whose values are the run's own clock (when it ran, what the service's clock said): they differ
#: between two runs that load the same data
RUN_CLOCK = {
    "synced_at",
    "observed_at",
    "body_fetched_at",
    "_dlt_valid_from",
    "_dlt_valid_to",
    "_dlt_load_id",
    "_dlt_id",
}
TABLES = (
    "workspaces", "workspace_history", "campaigns", "email_accounts", "webhook_event_types", "campaign_stats",
    "campaign_variants", "campaign_daily_sends", "campaign_recipients", "replies",
)  # fmt: skip


@pytest.fixture
def user_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A dlt user's environment: none of our settings, dlt's home in the test's directory, pacing off (the
    sandbox does not limit). Set for in-process pipelines too, restored afterwards."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DESTINATION__", "DLT_"))}
    env.update(DLT_DATA_DIR=str(tmp_path / "dlt"), SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0")
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    yield env
    os.environ.clear()
    os.environ.update(saved)


def _rows(con: duckdb.DuckDBPyConnection, relation: str) -> set[tuple[Any, ...]]:
    """A table's rows without the run's clock columns, as a set of (column, value) tuples."""
    columns = [c[0] for c in con.execute(f"select * from {relation} limit 0").description]
    kept = sorted(c for c in columns if c not in RUN_CLOCK)
    return {
        tuple(zip(kept, row, strict=True))
        for row in con.execute(f"select {', '.join(map(_quoted, kept))} from {relation}").fetchall()
    }


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _current(table: str) -> str:
    """Current versions only, where the table keeps history (scd2)."""
    return " where _dlt_valid_to is null" if table in ("campaigns", "email_accounts", "workspace_history") else ""


def test_rows_equal_what_our_sync_loads_in_duckdb_and_parquet_and_later_runs_read_only_changes(
    make_sandbox: Callable[..., Any], tmp_path: Path, user_env: dict[str, str]
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb, level="read")[0]
    ours = tmp_path / "ours.duckdb"
    os.environ["SOURCES__OUTREACH__API_KEY"] = key
    os.environ["SOURCES__OUTREACH__BASE_URL"] = sb.base_url
    os.environ["DESTINATION__FILESYSTEM__BUCKET_URL"] = str(tmp_path / "files")
    home = str(tmp_path / "dlt")
    into = dlt.destinations.duckdb(str(tmp_path / "user.duckdb"))
    users = dlt.pipeline("user_duckdb", destination=into, dataset_name="raw", pipelines_dir=home)
    files = dlt.pipeline("user_files", destination="filesystem", dataset_name="raw", pipelines_dir=home)

    def sync_all() -> list[int]:
        """Our sync, then the user's source into duckdb and parquet: the requests of each."""
        counts = []
        sb.reset_metrics()
        run_sync(**sandbox_sync_args(sb, [key], ours, tmp_path))
        counts.append(sb.metrics()["requests"])
        for pipeline in (users, files):
            sb.reset_metrics()
            pipeline.run(outreach(), loader_file_format="parquet")
            counts.append(sb.metrics()["requests"])
        return counts

    first = sync_all()
    assert first[1] == first[2] and first[1] >= 40
    with duckdb.connect(str(ours), read_only=True) as con, duckdb.connect(str(tmp_path / "user.duckdb")) as user:
        before = {t: _rows(con, f"ours.outreach.{t}{_current(t)}") for t in ("campaign_recipients", "replies")}
        for table in TABLES:
            expected = _rows(con, f"ours.outreach.{table}{_current(table)}")
            assert expected, table
            assert _rows(user, f"raw.{table}{_current(table)}") == expected, table
            parquet = str(tmp_path / "files" / "raw" / table / "*.parquet")
            assert _rows(user, f"read_parquet('{parquet}')") == expected, table

    # nothing changed: the user's second run costs what our idle quick sync costs
    idle = sync_all()
    assert idle[1] == idle[2] == idle[0] <= 5, idle

    # an hour of the service's life: sends, opens, replies. Quick runs read what changed and agree again
    # (ours reads only the pages that changed; a user's reads a changed campaign whole)
    sb.advance(3600)
    later = sync_all()
    assert later[1] == later[0] < first[1] // 2, (first, later)  # tiny, measured: 58, then 9 for both
    with duckdb.connect(str(ours), read_only=True) as con, duckdb.connect(str(tmp_path / "user.duckdb")) as user:
        for table, rows in before.items():  # the hour changed both: the comparison below sees new data
            assert _rows(con, f"ours.outreach.{table}") != rows, table
        for table in TABLES:
            assert _rows(user, f"raw.{table}{_current(table)}") == _rows(
                con, f"ours.outreach.{table}{_current(table)}"
            ), table
    # quick's page guide: the summaries kept in the user's state are what our sync sums from its warehouse
    state = users.state["sources"]["outreach"]
    campaign_ids = sorted(next(iter(state["workspaces"].values()))["campaign_pages"])
    from_state = StateReader(3600)
    from_state.bind(state)
    into_ours = dlt.destinations.duckdb(str(ours))
    warehouse = WarehouseReader(
        dlt.pipeline("read_ours", destination=into_ours, dataset_name="outreach", pipelines_dir=home)
    )
    try:
        expected_pages = warehouse.stored_pages(campaign_ids, constants.PER_PAGE_RECIPIENTS)
    finally:
        warehouse.close()
    assert campaign_ids and from_state.stored_pages(campaign_ids, constants.PER_PAGE_RECIPIENTS) == expected_pages
    written = [p for p in [*(tmp_path / "dlt").rglob("*"), tmp_path / "user.duckdb"] if p.is_file()]
    assert written and not [p for p in written if key.encode() in p.read_bytes()]


def test_a_run_that_fails_half_way_raises_the_cause_and_advances_nothing(
    make_sandbox: Callable[..., Any], tmp_path: Path, user_env: dict[str, str]
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb, level="read")[0]
    into = dlt.destinations.duckdb(str(tmp_path / "user.duckdb"))
    pipeline = dlt.pipeline("user_fails", destination=into, dataset_name="raw", pipelines_dir=str(tmp_path / "dlt"))
    source = outreach(api_key=key, base_url=sb.base_url)  # the key is checked here, before the faults
    sb.set_faults(error_rate=0.2, statuses=[403], seed=3)  # a fifth of the reads refused, from the first
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(source)
    cause = root_cause(failed.value)
    assert sb.metrics()["by_status"]["200"] >= 5  # half way: lists and stats were read (seed 3: at a leads page)
    assert isinstance(cause, ForbiddenError) and "\n" not in str(cause), cause
    assert "workspaces" not in pipeline.state.get("sources", {}).get("outreach", {})  # no cursor advanced

    sb.set_faults(error_rate=0.0)
    sb.reset_metrics()
    pipeline.run(outreach(api_key=key, base_url=sb.base_url))
    assert sb.metrics()["requests"] >= 40  # read everything again: nothing was taken as loaded
    with duckdb.connect(str(tmp_path / "user.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from raw.campaign_recipients").fetchone() == (200,)


def test_full_runs_fetch_deferred_bodies_and_never_wipe_a_loaded_one(
    make_sandbox: Callable[..., Any], tmp_path: Path, user_env: dict[str, str]
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb, level="read")[0]
    into = dlt.destinations.duckdb(str(tmp_path / "user.duckdb"))
    pipeline = dlt.pipeline("user_full", destination=into, dataset_name="raw", pipelines_dir=str(tmp_path / "dlt"))

    def bodies() -> dict[str, str]:
        with duckdb.connect(str(tmp_path / "user.duckdb"), read_only=True) as con:
            rows = con.execute("select id, body from raw.replies where body is not null").fetchall()
        return dict(rows)

    seen: dict[str, str] = {}
    counts = []
    for _ in range(3):
        pipeline.run(outreach(api_key=key, base_url=sb.base_url, mode="full", reply_body_cap=10, reply_lookback_s=0))
        now = bodies()
        assert all(now.get(rid) == body for rid, body in seen.items())  # a loaded body stays
        seen = now
        counts.append(len(now))
    state = pipeline.state["sources"]["outreach"]["workspaces"]
    deferred = next(iter(state.values()))["deferred_replies"]
    with duckdb.connect(str(tmp_path / "user.duckdb"), read_only=True) as con:
        replies = con.execute("select count(*) from raw.replies").fetchone()
        without = con.execute("select count(*) from raw.replies where body is null").fetchone()
    assert replies is not None and replies[0] > 30 and without == (len(deferred),), (replies, without)
    assert counts[0] == 10 and counts[0] < counts[1] < counts[2], counts  # deferred bodies arrive run by run


def test_a_bad_key_or_mode_fails_in_one_line_when_the_source_is_made(
    make_sandbox: Callable[..., Any], user_env: dict[str, str]
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    with pytest.raises(AuthError) as rejected:
        outreach(api_key="not-a-key", base_url=sb.base_url)
    assert "401" in str(rejected.value) and "\n" not in str(rejected.value) and "not-a-key" not in str(rejected.value)
    with pytest.raises(ConfigError, match="unknown mode 'fast': use one of quick, full"):
        outreach(api_key=admin_keys(sb, level="read")[0], base_url=sb.base_url, mode="fast")
    assert sb.metrics()["requests"] == 1  # the bad mode is refused before any request
