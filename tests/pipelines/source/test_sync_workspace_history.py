"""Credits history: `workspace_history` keeps a version of GET /account whenever it changes (scd2 on
the service's clock, like campaigns), while `workspaces` stays one current row per workspace rewritten by every
sync (synced_at, observed_at). Real sandbox, real DuckDB file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_sync_support import admin_keys, query

from pipelines.sync.edge import run_sync


def test_a_credit_change_adds_a_version_and_an_unchanged_account_none(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    db = tmp_path / "outreach.duckdb"

    def sync(mode: str, api_keys: list[str]) -> None:
        run_sync(
            mode=mode, api_keys=api_keys, base_url=sb.base_url, duckdb_path=db, pipelines_dir=tmp_path / "p",
            spool_dir=tmp_path / "no-spool", progress=False, rate_limit_per_minute=0, reply_body_cap=0,
        )  # fmt: skip

    def history() -> list[tuple[Any, ...]]:
        return query(
            db,
            "select id, credits__balance, _dlt_valid_from, _dlt_valid_to from outreach.workspace_history "
            "order by id, _dlt_valid_from",
        )

    sync("full", keys)
    first = history()
    balances = {r[0]: r[1] for r in first}
    assert len(first) == len(keys) == len(balances) and all(r[3] is None for r in first)
    assert {r[2] for r in first} == {query(db, "select max(observed_at) from outreach.workspaces")[0][0]}

    sync("quick", keys)  # nothing moved: no new version, but workspaces is rewritten (fresh synced_at)
    assert history() == first
    synced = query(db, "select id, synced_at from outreach.workspaces order by id")

    sb.advance(3 * 86400)  # three days of sends use credits
    after = {
        r[0]: r[1] for r in query(db, "select id, credits__balance from outreach.workspace_history")
    }  # unchanged until the next sync
    assert after == balances
    sync("quick", keys[:1])  # one workspace only: the other's history is not retired
    versions = history()
    used = {wid for wid, n in query(db, "select id, count(*) from outreach.workspace_history group by id") if n == 2}
    assert len(used) == 1, versions
    (wid,) = used
    old, new = [r for r in versions if r[0] == wid]
    assert new[1] < old[1], "the new version holds the lower balance"
    assert old[3] == new[2] and new[3] is None, "the old version ends where the new one starts (service clock)"
    current = query(db, "select credits__balance, observed_at from outreach.workspaces where id = ?", wid)
    assert current == [(new[1], new[2])], "workspaces holds the current balance, observed at the version's start"
    others = [r for r in versions if r[0] != wid]
    assert others and all(r[3] is None for r in others), "a workspace not in the run keeps its current version"
    assert query(db, "select count(*), count(distinct id) from outreach.workspaces") == [(len(keys), len(keys))]
    newer = dict(query(db, "select id, synced_at from outreach.workspaces"))
    assert newer[wid] > dict(synced)[wid]
