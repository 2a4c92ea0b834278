"""A quick sync sees unsubscribes through webhook events.

The campaign list's running totals have no unsubscribe count, so an unsubscribe alone leaves a campaign's
fingerprint as it was and a quick sync skipped the campaign: the recipient stayed `active` or `sent` in the
warehouse until the nightly full sync. A `lead.unsubscribed` (or `lead.bounced`) event loaded from the spool
now marks its campaign for a re-read in the same quick run.

Real signed deliveries from a `small` sandbox with two workspaces: about two unsubscribes a simulated day
(`tiny` has too few sends: none in two simulated days over six workspaces, measured). The sandbox is
deterministic for a seed and a sequence of clock moves and writes (sandbox/README.md), so a first sandbox
scouts quarter-hour steps (as the quick schedule runs) in which a campaign's list stays the same while one of
its recipients unsubscribes; a second one, moved through the same steps, is synced right before and after
that step: ours (the spool loaded) must have the recipient unsubscribed, and a control warehouse synced the
same way without the spool still shows the old status (the gap the events close). About 90 s.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_models_engagement_support import Delivered, delivered_sandbox

from pipelines.sync.edge import run_sync

pytestmark = pytest.mark.timeout(900)

WORKSPACES = 2  # the default sandbox of these tests
STEP_S = 900  # a quarter of an hour of the service's clock, the quick sync's schedule
MAX_STEPS = 192  # two simulated days
WANTED = 1  # steps with an unsubscribe in a quiet campaign


def _statuses(warehouse: Path, ids: set[str]) -> dict[str, str]:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{warehouse}' as w (read_only)")
        marks = ", ".join("?" * len(ids))
        rows = con.execute(f"select id, status from w.outreach.campaign_recipients where id in ({marks})", list(ids))
        return {str(i): str(s) for i, s in rows.fetchall()}
    finally:
        con.close()


def _list_stats(world: Delivered) -> dict[str, tuple[Any, ...]]:
    """Each campaign's status and running totals as the campaign list shows them (what a fingerprint hashes)."""
    out: dict[str, tuple[Any, ...]] = {}
    for key in world.read_keys.values():
        answer = world.sandbox.http.get(
            f"{world.sandbox.base_url}/campaigns", params={"per_page": 100}, headers={"Authorization": f"Bearer {key}"}
        )
        for c in answer.json()["data"]:
            out[c["id"]] = (c["status"], *sorted(c["stats"].items()))
    return out


def _unsubscribed(deliveries: list[dict[str, Any]]) -> dict[str, str]:
    """lead id -> campaign id of the lead.unsubscribed deliveries."""
    return {
        d["payload"]["data"]["lead_id"]: d["payload"]["data"]["campaign_id"]
        for d in deliveries
        if d["event"] == "lead.unsubscribed"
    }


def _scout(make_sandbox: Callable[..., Any], workdir: Path) -> dict[int, dict[str, str]]:
    """Steps (by number) whose unsubscribes all fall in campaigns with an unchanged list: lead -> campaign."""
    found: dict[int, dict[str, str]] = {}
    with delivered_sandbox(make_sandbox, workdir, workspaces=WORKSPACES) as scout:
        scout.subscribe(["lead.unsubscribed", "lead.bounced"])
        seen, before = len(scout.deliveries()), _list_stats(scout)
        for step in range(MAX_STEPS):
            deliveries = scout.advance(STEP_S)
            fresh, seen = deliveries[seen:], len(deliveries)
            after = _list_stats(scout)
            unsubscribed = _unsubscribed(fresh)
            if unsubscribed and all(before.get(c) == after.get(c) for c in unsubscribed.values()):
                found[step] = unsubscribed
                if len(found) == WANTED:
                    break
            before = after
    return found


def test_quick_sync_reads_a_campaign_again_for_an_unsubscribe_event(
    make_sandbox: Callable[..., Any], tmp_path: Path
) -> None:
    quiet_steps = _scout(make_sandbox, tmp_path / "scout")
    assert len(quiet_steps) == WANTED, f"the scout found {len(quiet_steps)} quiet unsubscribe(s)"

    control = tmp_path / "control" / "outreach.duckdb"
    (tmp_path / "control" / "no-spool").mkdir(parents=True)
    with delivered_sandbox(make_sandbox, tmp_path / "ours", workspaces=WORKSPACES) as world:

        def both(mode: str) -> Any:
            run_sync(
                mode=mode, api_keys=list(world.read_keys.values()), base_url=world.sandbox.base_url,
                duckdb_path=control, spool_dir=tmp_path / "control" / "no-spool", progress=False,
                rate_limit_per_minute=0, reply_body_cap=0, pipelines_dir=tmp_path / "control" / "dlt",
            )  # fmt: skip
            return world.sync(mode)

        world.subscribe(["lead.unsubscribed", "lead.bounced"])  # the same writes as the scout's, in order
        world.deliveries()
        both("full")
        for step in range(max(quiet_steps) + 1):
            if step in quiet_steps:
                both("quick")  # the fingerprints as the step starts
            deliveries = world.advance(STEP_S)
            if step not in quiet_steps:
                continue
            assert quiet_steps[step].keys() <= _unsubscribed(deliveries).keys(), "the replay repeats the scout"
            report = both("quick")
            leads = set(quiet_steps[step])
            assert _statuses(world.warehouse, leads) == dict.fromkeys(leads, "unsubscribed")
            assert "unsubscribed" not in _statuses(control, leads).values(), "quick without the events misses them"
            marked = sum(ws.campaigns_from_events for ws in report.workspaces)
            assert marked >= len(set(quiet_steps[step].values()))
            assert "from webhook events)" in report.summary()
        # the next quick sync reads those campaigns no more: their events are older than its state
        report = world.sync("quick")
        assert sum(ws.campaigns_from_events for ws in report.workspaces) == 0
