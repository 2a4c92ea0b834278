"""Incremental models equal a full refresh after simulated days of syncs, on DuckDB and on PostgreSQL.

A `tiny` sandbox is synced and built; then days pass on the sandbox's clock with a quick and a full sync;
a recipient is re-written with another address, then moved back by the full sync's re-read; rows the API
never returned appear in the warehouse (a recipient of a new lead, a reply of an existing lead), the full
sync (the nightly reconcile) marks them deleted and closes the scd2 version of a campaign the API stopped
returning, and every sync is followed by an incremental build; a last incremental build changes a var
(`extra_reply_classes`), which changes every lead. At the end every table of `reporting` is kept aside, the
same warehouse is rebuilt with `--full-refresh`, and each table must equal its kept
copy row for row (EXCEPT ALL both ways, and the row counts).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pytest

from models import change_share
from models.build import build
from pipelines.sync.edge import run_sync
from tests.duckdb_sql import run_pg_sql

pytestmark = pytest.mark.timeout(2400)  # four syncs and five builds: minutes on a loaded 2-CPU machine

KEPT = "incremental_kept"
NEW_LEAD = "incremental.new.lead@example.org"
MOVED_LEAD = "incremental.moved.lead@example.org"
AS_POSITIVE = {"extra_reply_classes": {"not_interested": "positive"}}


def _admin_keys(sandbox: Any) -> list[str]:
    keys: dict[str, str] = {}
    for entry in sandbox.keys():
        if entry["level"] == "rw" and entry["role"] == "admin":
            keys.setdefault(entry["workspace_id"], entry["key"])
    return list(keys.values())


def _drop_campaign(sandbox: Any) -> str:
    """The API stops returning one campaign with recipients (its replies stay): the next full sync closes its
    scd2 version, and every mart leaves it and its recipients out."""
    state = sandbox.app.state.sandbox.state
    with state.lock:
        workspace = state.workspaces[0]
        campaign = max(workspace.campaigns, key=lambda c: len(c.recipients.person))
        workspace.campaigns.remove(campaign)
        del workspace.campaign_by_id[campaign.id]
        return str(campaign.id)


class Warehouse:
    """One warehouse under test: SQL on it, the sync into it and the build of it."""

    def __init__(self, sandbox: Any, tmp: Path, execute: Callable[[str], list[tuple[Any, ...]]], **where: Any):
        self.sandbox, self.tmp, self.execute, self.where = sandbox, tmp, execute, where
        self.keys = _admin_keys(sandbox)

    def sync(self, mode: str) -> None:
        run_sync(
            mode=mode,
            api_keys=self.keys,
            base_url=self.sandbox.base_url,
            pipelines_dir=self.tmp / "dlt",
            spool_dir=self.tmp / "no-spool",
            progress=False,
            rate_limit_per_minute=0,
            reply_body_cap=20,
            **self.where,
        )

    def build(self, *, full_refresh: bool = False, dbt_vars: dict[str, Any] | None = None) -> None:
        report = build(
            self.where.get("duckdb_path"),
            destination=self.where.get("destination"),
            publish=False,
            full_refresh=full_refresh,
            dbt_vars=dbt_vars,
        )
        assert report.passed, report.summary()
        assert not report.every_row  # incremental, unless asked
        kinds = {m.name: m.kind for m in report.models}
        assert kinds["lead_engagement"] == "incremental"

    def one(self, sql: str) -> Any:
        return self.execute(sql)[0][0]


def _add_rows_the_api_never_returned(wh: Warehouse) -> None:
    """A recipient of a new lead and a reply of an existing lead, written after the last build."""
    workspace, campaign, lead = wh.execute(
        "select r.workspace_id, r.campaign_id, r.email from outreach.campaign_recipients r "
        "where r.deleted_at is null order by r.id limit 1"
    )[0]
    wh.execute(
        "insert into outreach.campaign_recipients (id, workspace_id, campaign_id, email, status, current_step, "
        f"synced_at) values ('gone-recipient', '{workspace}', '{campaign}', '{NEW_LEAD}', 'active', 1, "
        "current_timestamp)"
    )
    wh.execute(
        'insert into outreach.replies (id, workspace_id, campaign_id, "from", reply_type, received_at, '
        f"synced_at, _dlt_load_id, _dlt_id) values ('gone-reply', '{workspace}', '{campaign}', '{lead}', "
        "'interested', (select max(received_at) from outreach.replies), current_timestamp, 'x', 'gone-reply-row')"
    )


def _move_a_lead(wh: Warehouse) -> tuple[str, str]:
    """A sync re-writes a recipient with another address (its lead's address corrected in the service): the
    recipient leaves its lead, of no other recipient and no reply (nothing else touches it), for a new one.
    Returns (the old lead, the new)."""
    recipient, old = wh.execute(
        "select r.id, lower(r.email) from outreach.campaign_recipients r where r.deleted_at is null "
        "and lower(r.email) in (select lead_email from reporting.lead_engagement "
        "where count_campaigns = 1 and count_replies = 0) "
        "order by r.id limit 1"
    )[0]
    wh.execute(
        f"update outreach.campaign_recipients set email = '{MOVED_LEAD}', synced_at = current_timestamp "
        f"where id = '{recipient}'"
    )
    return old, MOVED_LEAD


def _reporting_tables(wh: Warehouse) -> list[str]:
    rows = wh.execute(
        "select table_name from information_schema.tables where table_schema = 'reporting' "
        "and table_name not like '%\\_\\_next' escape '\\' order by table_name"
    )
    return [r[0] for r in rows]


def _scenario(wh: Warehouse) -> None:
    wh.sync("full")
    wh.build()
    wh.sandbox.advance(86_400)
    wh.sync("quick")
    left, moved = _move_a_lead(wh)
    wh.build()
    leads_of = "select count(*) from reporting.lead_engagement where lead_email = '{}'"
    assert (wh.one(leads_of.format(left)), wh.one(leads_of.format(moved))) == (0, 1)  # the full sync moves it back

    # no build between: a recipient the API does not count fails the data test funnel_adds_up (it did)
    _add_rows_the_api_never_returned(wh)
    campaign = _drop_campaign(wh.sandbox)
    wh.sandbox.advance(86_400)
    wh.sync("full")  # the reconcile: marks the rows above deleted, closes the dropped campaign's version
    assert wh.one("select count(*) from outreach.campaign_recipients where deleted_at is not null") >= 1
    assert wh.one(f"select count(*) from outreach.campaigns where id = '{campaign}' and _dlt_valid_to is null") == 0
    wh.build()
    assert wh.one(f"select count(*) from reporting.lead_engagement where lead_email = '{NEW_LEAD}'") == 0
    # no sync, another var: which replies are positive changes for every lead (the snapshot's fingerprint)
    positive = "select sum(count_positive_replies) from reporting.lead_engagement"
    before = wh.one(positive)
    wh.build(dbt_vars=AS_POSITIVE)
    assert wh.one(positive) > before

    tables = _reporting_tables(wh)
    assert "lead_engagement" in tables and len(tables) >= 18
    wh.execute(f"create schema {KEPT}")
    for table in tables:
        wh.execute(f"create table {KEPT}.{table} as select * from reporting.{table}")
    wh.build(full_refresh=True, dbt_vars=AS_POSITIVE)
    assert _reporting_tables(wh) == tables
    for table in tables:
        rows = wh.one(f"select count(*) from reporting.{table}")
        assert rows == wh.one(f"select count(*) from {KEPT}.{table}"), table
        for a, b in (("reporting", KEPT), (KEPT, "reporting")):
            extra = wh.one(f"select count(*) from (select * from {a}.{table} except all select * from {b}.{table}) d")
            assert extra == 0, (table, f"{extra} rows of {a} are not in {b}")
    assert wh.one("select count(*) from reporting.lead_engagement") > 50


@pytest.fixture(autouse=True)
def _always_incremental(monkeypatch: pytest.MonkeyPatch) -> None:
    """The incremental path is what is checked here, also after full syncs (deletion marks, a closed campaign)
    and a changed var, where `outreach models` builds from every row instead (models/change_share.py)."""
    monkeypatch.setattr(change_share, "why_every_row", lambda target, fingerprint: "")


def test_incremental_equals_full_refresh_on_duckdb(make_sandbox: Callable[..., Any], tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    path = tmp_path / "outreach.duckdb"

    def execute(sql: str) -> list[tuple[Any, ...]]:
        with duckdb.connect() as con:
            con.execute(f"attach '{path}' as warehouse")  # the file's name is the schema's: never ambiguous
            con.execute("use warehouse")
            cursor = con.execute(sql)
            return cursor.fetchall() if cursor.description else []

    _scenario(Warehouse(sandbox, tmp_path, execute, duckdb_path=path))


def test_incremental_equals_full_refresh_on_postgres(
    make_sandbox: Callable[..., Any],
    tmp_path: Path,
    pg_dsn: str,
    pg_credentials: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    _scenario(Warehouse(sandbox, tmp_path, partial(run_pg_sql, pg_dsn), destination="postgres"))
