"""`lead_timeline` is incremental: a build renumbers only the leads with webhook events loaded since the last
good build, and events without a workspace move to their campaign's once it arrives. After two incremental
builds the table equals a `--full-refresh` row for row (the synthetic warehouse's events, devtools/synthetic.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtools.synthetic import make_raw_warehouse
from models.build import build
from tests.duckdb_sql import run_sql

pytestmark = pytest.mark.timeout(300)

COLUMNS = "event_id, event, created_at, received_at, workspace_id, campaign_id, lead_id, email, reply_type, data"


def _timeline(path: Path) -> list[tuple[Any, ...]]:
    return run_sql(path, "select * from reporting.lead_timeline order by all")


def _deliver(path: Path, load_id: str, rows: list[str]) -> None:
    """Events loaded by one load of the spool: dlt's insert-only merge adds rows with the load's id."""
    values = ", ".join(f"({row}, '{load_id}', '{load_id}-{n}')" for n, row in enumerate(rows))
    run_sql(path, f"insert into outreach.events ({COLUMNS}, _dlt_load_id, _dlt_id) values {values}")


def test_new_events_renumber_their_leads_and_an_arriving_campaign_claims_its_events(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    # an event of a campaign not synced yet, delivered to a receiver secret tied to no workspace
    _deliver(path, "2.1", ["'e-orphan', 'lead.opened', '2026-02-01 10:00+00', '2026-02-01 10:00:01+00', null, "
                           "'campaign-later', 'l-9', 'Late.Lead@Example.org', null, '{}'"])  # fmt: skip
    assert build(path, publish=False).passed
    orphan = run_sql(path, "select workspace_id, event_number from reporting.lead_timeline where event_id = 'e-orphan'")
    assert orphan == [(None, 1)]

    # a lead's event older than all its others: every event of that lead moves up one
    lead, workspace, campaign, first = run_sql(
        path,
        "select lead_email, workspace_id, campaign_id, event_at from reporting.lead_timeline "
        "where event_number = 1 and workspace_id is not null order by event_id limit 1",
    )[0]
    numbers_before = run_sql(
        path, f"select event_id, event_number from reporting.lead_timeline where lead_email = '{lead}' order by 1"
    )
    _deliver(path, "2.2", [
        f"'e-earlier', 'lead.opened', timestamptz '{first}' - interval 1 day, timestamptz '{first}', "
        f"'{workspace}', '{campaign}', 'l-1', '{lead}', null, '{{}}'",
        "'e-new-lead', 'lead.clicked', '2026-02-02 10:00+00', '2026-02-02 10:00:01+00', "
        f"'{workspace}', '{campaign}', 'l-2', 'new.lead@example.org', null, '{{}}'",
    ])  # fmt: skip
    assert build(path, publish=False).passed
    numbers = dict(
        run_sql(path, f"select event_id, event_number from reporting.lead_timeline where lead_email = '{lead}'")
    )
    assert numbers["e-earlier"] == 1
    assert all(numbers[event] == number + 1 for event, number in numbers_before)
    assert run_sql(path, "select event_number from reporting.lead_timeline where event_id = 'e-new-lead'") == [(1,)]

    # the campaign arrives: the orphan event takes its workspace, with no new event loaded
    workspace_of_new = run_sql(path, "select min(workspace_id) from outreach.campaigns")[0][0]
    run_sql(
        path,
        "insert into outreach.campaigns select * replace ('campaign-later' as id, "
        f"'{workspace_of_new}' as workspace_id, 'campaign-later-row' as _dlt_id) from outreach.campaigns limit 1",
    )
    assert build(path, publish=False).passed
    orphan = run_sql(path, "select workspace_id, event_number from reporting.lead_timeline where event_id = 'e-orphan'")
    assert orphan == [(workspace_of_new, 1)]
    incremental = _timeline(path)
    assert build(path, publish=False, full_refresh=True).passed
    assert _timeline(path) == incremental, "each incremental build kept every lead a full refresh gives"
