"""Drift never reaches a mart silently.

- A value dlt cannot coerce to its column's type lands in a variant column (`current_step__v_text`):
  the build fails on a data test naming the raw table, the column and the value; the published tables
  stay. A variant value that folds back without loss ('42' for an integer) is used.
- An enum value outside the known list (a recipient status `hard_bounced`, a new reply type) keeps its own
  row in the marts, is counted as "other" in lead_engagement, and a warning names the value.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dlt
import duckdb
import pytest

from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.errors import DataTestFailure

pytestmark = pytest.mark.timeout(300)

OUTREACH = Path(sys.executable).with_name("outreach")


def _one(path: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_value_dlt_could_not_coerce_fails_the_build_naming_table_and_column(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    build(path)
    before = _one(path, "select * from reporting.campaign_performance order by all")
    campaign, workspace = _one(path, "select campaign_id, workspace_id from reporting.campaign_performance limit 1")[0]

    @dlt.resource(table_name="campaign_recipients", write_disposition="append",
                  columns={"current_step": {"data_type": "bigint"}})  # fmt: skip
    def drifted() -> object:
        yield {"id": "drifted-1", "workspace_id": workspace, "campaign_id": campaign, "email": "new@example.com",
               "status": "active", "current_step": "two"}  # fmt: skip

    # a real dlt load, as the sync does when the API starts sending current_step as text
    pipeline = dlt.pipeline("drift_test", destination=dlt.destinations.duckdb(str(path)), dataset_name="outreach",
                            pipelines_dir=str(tmp_path / "dlt"))  # fmt: skip
    pipeline.run(drifted())
    assert _one(path, "select current_step, current_step__v_text from outreach.campaign_recipients "
                      "where id = 'drifted-1'") == [(None, "two")]  # fmt: skip

    with pytest.raises(DataTestFailure) as info:
        build(path)
    line = next(p for p in info.value.problems if "no_uncoerced_variants" in p)
    assert line.startswith("test no_uncoerced_variants: "), line
    assert line.endswith(": 1 row (raw_table=campaign_recipients variant_column=current_step__v_text raw_value=two)")
    assert _one(path, "select * from reporting.campaign_performance order by all") == before

    out = subprocess.run(
        [str(OUTREACH), "models", "--duckdb", str(path)], capture_output=True, text=True, timeout=240, check=False
    )
    assert out.returncode == 1
    assert any("variant_column=current_step__v_text" in line and line.startswith("error: test ")
               for line in out.stderr.splitlines()), out.stderr  # fmt: skip


def test_a_variant_value_that_folds_back_without_loss_is_used(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=600)
    con = duckdb.connect(str(path))
    mailbox = con.execute("select min(id) from outreach.email_accounts where _dlt_valid_to is null").fetchall()[0][0]
    con.execute("alter table outreach.email_accounts add column daily_send_limit__v_text varchar")
    con.execute("update outreach.email_accounts set daily_send_limit = null, daily_send_limit__v_text = ' 42 ' "
                f"where id = '{mailbox}' and _dlt_valid_to is null")  # fmt: skip
    con.close()
    report = build(path)
    assert report.passed
    limit = _one(path, f"select daily_send_limit from reporting.mailbox_health where email_account_id = '{mailbox}'")
    assert limit == [(42,)]


def test_unknown_enum_values_stay_visible_and_a_warning_names_them(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    con = duckdb.connect(str(path))
    recipient, campaign, lead = con.execute(
        "select id, campaign_id, lower(trim(email)) from outreach.campaign_recipients where status = 'bounced' "
        "order by id limit 1"
    ).fetchall()[0]
    con.execute(f"update outreach.campaign_recipients set status = 'hard_bounced' where id = '{recipient}'")
    reply = con.execute("select min(id) from outreach.replies").fetchall()[0][0]
    con.execute(f"update outreach.replies set reply_type = 'maybe_later' where id = '{reply}'")
    con.close()

    report = build(path)
    assert report.passed, report.problem_lines()
    summary = report.summary()
    assert "value_field=hard_bounced n_records=1" in summary, summary
    assert "value_field=maybe_later n_records=1" in summary, summary
    funnel = _one(path, "select status_order, count_recipients from reporting.recipient_funnel "
                        f"where campaign_id = '{campaign}' and recipient_status = 'hard_bounced'")  # fmt: skip
    assert funnel == [(99, 1)]
    engagement = _one(path, "select count_campaigns, count_campaigns_bounced, count_campaigns_other_status "
                            f"from reporting.lead_engagement where lead_email = '{lead}'")  # fmt: skip
    campaigns, bounced, other = engagement[0]
    assert (
        other == 1
        and bounced
        == _one(
            path,
            f"select count(*) from outreach.campaign_recipients where lower(trim(email)) = '{lead}' "
            "and status = 'bounced'",
        )[0][0]
    )
    assert int(str(campaigns)) >= 1
    outcome = _one(
        path, "select is_positive, count_replies from reporting.reply_outcomes where reply_type = 'maybe_later'"
    )
    assert outcome == [(False, 1)]
