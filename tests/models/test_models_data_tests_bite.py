"""Each data test of meaning fails on a crafted warehouse that breaks its invariant the way the old definitions did.

A synthetic warehouse is built once (every test passes); for each data test a copy gets the old definition's
value written into the mart (a rate over delivered messages, a percentage, a first send taken from
last_sent_at, an all-zero day before the campaign existed, a winner on a tiny sample, ...), and
`dbt test --select <test>` must fail on it, naming offending rows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.dbt_invoke import invoke
from pipelines.warehouse.destination import Warehouse

pytestmark = pytest.mark.timeout(300)

# data test -> SQL that writes the old (wrong) definition into the published marts
BREAKS: dict[str, list[str]] = {
    # the old reply_rate divided replied recipients by delivered messages
    "primary_rates_match_service": [
        "update reporting.campaign_performance set reply_rate = cast(count_replied as double) / count_delivered "
        "where count_delivered > 0 and count_replied > 0"
    ],
    # the old rates were percentages 0-100
    "rates_in_range": ["update reporting.campaign_performance set open_rate = open_rate * 100 where open_rate > 0.02"],
    # the old human_reply_rate had a smaller denominator than reply_rate: it came out larger
    "reply_rates_nested": [
        "update reporting.campaign_performance set human_reply_rate = reply_rate + 0.05 where reply_rate > 0"
    ],
    # the old positive count took any sender address, not the campaign's replied recipients
    "funnel_narrows": [
        "update reporting.campaign_performance set count_positive_replies = count_human_replied + 3 "
        "where count_human_replied > 0"
    ],
    # the old first send was the minimum of last_sent_at, after some replies
    "durations_not_negative": [
        "update reporting.campaign_performance set hours_to_first_reply = -310.0 where first_reply_at is not null"
    ],
    # a daily row that counts sends the history does not hold
    "daily_sends_add_up": [
        "update reporting.campaign_daily set count_sent = count_sent + 7 where is_send_observed and count_sent > 0"
    ],
    # the old daily mart had all-zero rows before the campaign existed, and zeros on unobserved days
    "rows_inside_grain": [
        """insert into reporting.campaign_daily by name
        select campaign_id, workspace_id, cast(created_at as date) - 3 as activity_date, true as is_send_observed,
            0 as count_sent, 0 as count_opened, 0 as count_clicked, 0 as count_replied, 0 as count_bounced,
            0 as count_replies_received, 0 as count_positive_replies_received, 0 as cumulative_sent
        from reporting.campaign_performance""",
        "update reporting.campaign_daily set count_sent = 0 where not is_send_observed",
    ],
    # the old A/B test named winners on tiny samples, without correction
    "single_winner": [
        """update reporting.variant_performance set is_winner = true, estimated_recipients = 40,
            adjusted_p_value = p_value / 2
        where (campaign_id, variant_index) in (
            select campaign_id, min(variant_index) from reporting.variant_performance
            where count_variants_in_campaign > 1 and not is_winner and p_value is not null group by campaign_id
        )"""
    ],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = make_raw_warehouse(tmp_path_factory.mktemp("bite") / "outreach.duckdb", recipients=2500, seed=5)
    assert build(path, publish=False).passed  # every data test passes on the good marts
    return path


def _run_test(warehouse: Path, name: str) -> tuple[str, int | None]:
    target = Warehouse(destination="duckdb", duckdb_path=warehouse)
    outcome = invoke(["test", "--select", name], target)
    statuses = [(str(r.status), r.failures) for r in outcome.results if r.node.name == name]
    assert statuses, f"{name} did not run: {outcome.exception}"
    return statuses[0]


def test_every_data_test_passes_on_the_good_marts(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "outreach.duckdb"
    shutil.copyfile(built, copy)
    for name in BREAKS:
        assert _run_test(copy, name)[0] == "pass", name


def _broken_copy(built: Path, tmp_path: Path, statements: list[str]) -> tuple[Path, int]:
    """A copy of the built warehouse with `statements` run on it, and how many rows they changed."""
    copy = tmp_path / "outreach.duckdb"
    shutil.copyfile(built, copy)
    con = duckdb.connect()
    try:
        con.execute(f"attach '{copy}' as warehouse")
        con.execute("use warehouse")
        changed = 0
        for sql in statements:
            con.execute(sql)
            changed += int(con.fetchall()[0][0])
    finally:
        con.close()
    return copy, changed


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_data_test_fails_on_the_old_definition(built: Path, tmp_path: Path, name: str) -> None:
    copy, changed = _broken_copy(built, tmp_path, BREAKS[name])
    assert changed > 0, f"the crafted case for {name} changed no row"
    status, failures = _run_test(copy, name)
    assert status == "fail" and failures, (name, status, failures)


def test_a_models_rules_fail_one_row_per_broken_rule_naming_its_column(built: Path, tmp_path: Path) -> None:
    """One `model_rules` test per model (macros/tests/model_rules.sql): a null, a duplicated key, an unknown value
    and an orphan key in one mart make one failing row each, with an offending value and how many rows break it."""
    mart = "reporting.mailbox_health"
    accounts = f"(select distinct email_account_id from {mart})"
    nth = f"(select email_account_id from {accounts} as a order by 1 limit 1 offset %d)"  # the n-th mailbox
    copy, changed = _broken_copy(
        built,
        tmp_path,
        [
            f"insert into {mart} select * from {mart} where email_account_id = {nth % 0}",
            f"update {mart} set workspace_id = null where email_account_id in ({nth % 1}, {nth % 2})",
            f"update {mart} set reputation_trend = 'sideways' where email_account_id = {nth % 3}",
            f"update {mart} set workspace_id = 'no-such-workspace' where email_account_id = {nth % 4}",
        ],
    )
    assert changed == 5, f"the crafted rows changed {changed} rows, not 5: fewer than 5 mailboxes?"
    outcome = invoke(
        ["test", "--select", "mailbox_health,test_name:model_rules"], Warehouse(destination="duckdb", duckdb_path=copy)
    )
    (result,) = [r for r in outcome.results if r.node.resource_type == "test"]  # not the on-run-end hook
    assert (str(result.status), result.failures) == ("fail", 4)
    con = duckdb.connect()
    try:
        con.execute(f"attach '{copy}' as warehouse (read_only)")
        con.execute("use warehouse")
        first = con.execute(f"select {nth % 0}").fetchall()[0][0]
        rows = sorted(con.execute(result.node.compiled_code).fetchall(), key=str)
    finally:
        con.close()
    assert rows == [
        ("accepted_values", "reputation_trend", "sideways", 1),
        ("not_null", "workspace_id", None, 2),
        ("relationships", "workspace_id", "no-such-workspace", 1),
        ("unique", "email_account_id", first, 2),
    ]
