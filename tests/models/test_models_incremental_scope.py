"""The incremental models' data tests read only the leads the build rewrote, and the staging test of recipients only
the raw rows written since the last build, with `unique` still reaching every row that shares a key with them
(macros/incremental_scope.sql). That the snapshot is trusted only for the same project
and vars (its fingerprint): tests/models/test_models_incremental_sandbox.py, on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.errors import DataTestFailure
from tests.duckdb_sql import run_sql

pytestmark = pytest.mark.timeout(300)


def _sync_touches(path: Path, lead: str, synced_at: str) -> None:
    """A sync run starting at `synced_at` re-writes the lead's recipients."""
    run_sql(
        path, f"update outreach.campaign_recipients set synced_at = '{synced_at}' where lower(trim(email)) = '{lead}'"
    )


def test_the_tests_of_an_incremental_build_read_the_leads_it_rebuilt(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    assert build(path, publish=False).passed
    leads = "select lead_email from reporting.lead_engagement group by 1 having count(*) = 1 order by 1 limit 2"
    untouched, touched = (row[0] for row in run_sql(path, leads))
    rows_of = f"select count(*) from reporting.lead_engagement where lead_email = '{untouched}'"

    # a second row of a lead no sync touches: the scoped test does not read it (a full one would fail)
    run_sql(path, f"insert into reporting.lead_engagement select * from reporting.lead_engagement "
                 f"where lead_email = '{untouched}'")  # fmt: skip
    _sync_touches(path, touched, "2030-01-01 00:00:01+00")
    assert build(path, publish=False).passed
    assert run_sql(path, rows_of) == [(2,)]

    # a webhook event delivered twice, loaded now: its lead is touched, and its two rows break `unique`
    event_id = run_sql(path, "select event_id from reporting.lead_timeline where lead_email is not null limit 1")[0][0]
    run_sql(path, "insert into outreach.events select * replace ('9.9' as _dlt_load_id, 'dup-row' as _dlt_id) "
                 f"from outreach.events where event_id = '{event_id}'")  # fmt: skip
    with pytest.raises(DataTestFailure) as failure:
        build(path, publish=False)
    failed = {t.name for t in failure.value.report.tests if t.failed}
    assert "model_rules_lead_timeline" in failed, failed


def test_the_staging_test_of_recipients_reads_the_rows_written_since_the_last_build(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    assert build(path, publish=False).passed
    first = "select id from outreach.campaign_recipients where deleted_at is null order by id limit 1"
    recipient = run_sql(path, first)[0][0]
    copy = f"_dlt_id = 'copy' and id = '{recipient}'"
    stamp = "update outreach.campaign_recipients set synced_at = {} where " + copy

    # a copy of a recipient with its old stamp, as no sync writes it: the scoped test does not read it
    run_sql(path, "insert into outreach.campaign_recipients select * replace ('copy' as _dlt_id) "
                 f"from outreach.campaign_recipients where id = '{recipient}'")  # fmt: skip
    assert build(path, publish=False).passed

    # a sync writes the copy: its key reaches the row it shares it with, which the test did not read
    run_sql(path, stamp.format("'2030-01-01 00:00:01+00'"))
    with pytest.raises(DataTestFailure) as failure:
        build(path, publish=False)
    assert "model_rules_stg_campaign_recipients" in {t.name for t in failure.value.report.tests if t.failed}

    # and a build from every row reads every row
    run_sql(path, stamp.format("(select min(synced_at) from outreach.campaign_recipients)"))
    with pytest.raises(DataTestFailure) as failure:
        build(path, publish=False, full_refresh=True)
    assert "model_rules_stg_campaign_recipients" in {t.name for t in failure.value.report.tests if t.failed}
