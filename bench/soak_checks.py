"""The soak's checks on the warehouse: duplicates per primary key and scd2 version, and the warehouse
against the API (`bench.truth`, and every stored reply body)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import httpx

from bench.bound import unchanged_fingerprints
from bench.snapshot import Snapshot
from bench.truth import WAREHOUSE_ALIAS, check_warehouse, connect_warehouse
from pipelines.core.constants import PRIMARY_KEYS

# Primary keys of the raw tables (pipelines/SCHEMA.md), and of the two the sync keeps beside them; scd2 tables
# are checked apart.
TABLE_KEYS: dict[str, tuple[str, ...]] = {**PRIMARY_KEYS, "sync_state": ("workspace_id",), "events": ("event_id",)}
SCD2_TABLES = ("campaigns", "email_accounts")


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_catalog = ? and table_schema = 'outreach'",
        [WAREHOUSE_ALIAS],
    ).fetchall()
    return {r[0] for r in rows}


def duplicates(db: Path) -> dict[str, int]:
    """Rows beyond the first per primary key, per table; scd2: ids with more than one current row, and
    versions (id, valid from) stored twice. Only non-zero counts are returned."""
    con = connect_warehouse(db)
    try:
        present = _tables(con)
        found: dict[str, int] = {}
        for table, key in TABLE_KEYS.items():
            if table not in present:
                continue
            cols = ", ".join(f'"{k}"' for k in key)
            found[table] = _one(
                con, f"select coalesce(sum(n - 1), 0) from (select count(*) n from outreach.{table} group by {cols})"
            )
        for table in SCD2_TABLES:
            if table not in present:
                continue
            found[f"{table} current"] = _one(
                con,
                f"select coalesce(sum(n - 1), 0) from (select count(*) n from outreach.{table} "
                "where _dlt_valid_to is null group by id)",
            )
            found[f"{table} versions"] = _one(
                con,
                f"select coalesce(sum(n - 1), 0) from (select count(*) n from outreach.{table} "
                "group by id, _dlt_valid_from)",
            )
        return {k: v for k, v in found.items() if v}
    finally:
        con.close()


def _one(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


class BodyCache:
    """Reply bodies from the API, each fetched once (a body never changes), on the sandbox's own client."""

    def __init__(self, http: httpx.Client, base_url: str) -> None:
        self.http, self.base_url = http, base_url
        self.bodies: dict[str, Any] = {}

    def body(self, key: str, reply_id: str) -> Any:
        if reply_id not in self.bodies:
            response = self.http.get(
                f"{self.base_url}/replies/{reply_id}", headers={"Authorization": f"Bearer {key}"}, timeout=30
            )
            self.bodies[reply_id] = response.raise_for_status().json()["data"]["body"]
        return self.bodies[reply_id]


def check_bodies(db: Path, snaps: dict[str, Snapshot], keys: dict[str, str], cache: BodyCache) -> dict[str, int]:
    """Stored reply bodies against the API's: how many are null, how many differ."""
    con = connect_warehouse(db)
    try:
        rows = con.execute("select workspace_id, id, body from outreach.replies where deleted_at is null").fetchall()
    finally:
        con.close()
    null = differ = 0
    for workspace_id, reply_id, body in rows:
        if body is None:
            null += 1
        elif workspace_id in snaps and body != cache.body(keys[workspace_id], str(reply_id)):
            differ += 1
    return {"bodies_null": null, "bodies_differ": differ}


def check_truth(
    db: Path,
    snaps: dict[str, Snapshot],
    previous: dict[str, Snapshot] | None,
    keys: dict[str, str],
    cache: BodyCache,
    *,
    bodies_deferred: int,
) -> dict[str, Any]:
    """The warehouse against the API, every workspace: `bench.truth` (quick's blind spots tolerated when
    there is a previous snapshot) and the reply bodies. ok = no mismatch, no body differing, no body
    missing beyond those the sync said it deferred."""
    out: dict[str, Any] = {"ok": True, "tolerated": 0, "mismatches": []}
    for workspace_id, snap in snaps.items():
        before = (previous or {}).get(workspace_id)
        tolerate = unchanged_fingerprints(before, snap) if before is not None else frozenset()
        report = check_warehouse(db, snap, ignore_is_read=before is not None, tolerate_campaigns=tolerate)
        out["tolerated"] += report.tolerated
        if not report.ok:
            out["ok"] = False
            out["mismatches"] += [f"{workspace_id}: {line}" for line in report.summary().splitlines()
                                  if "MISMATCH" in line or line.startswith("    e.g.")]  # fmt: skip
    bodies = check_bodies(db, snaps, keys, cache)
    out.update(bodies)
    if bodies["bodies_differ"] or bodies["bodies_null"] > bodies_deferred:
        out["ok"] = False
    if not out["mismatches"]:
        del out["mismatches"]
    return out
