"""`truth_ok`: does a warehouse equal the API? Ids and key fields per table, no duplicates.

The API side comes from `bench.snapshot.take_snapshot` (independent httpx paging). The warehouse
side is read with plain SQL. Each table is described by a `TableSpec` that maps logical fields to
the warehouse's columns, so the same check runs on our warehouse (pipelines/SCHEMA.md) and on the
baseline's (`BASELINE_SPECS`, dlt's default naming of the rest_api resources).

Rules: current rows only (`_dlt_valid_to is null` for scd2 tables, `deleted_at is null` where that
column exists). Every API row must be in the warehouse with equal key fields; no current warehouse
row may be absent from the API (except `campaign_daily_sends`, which keeps history beyond the
API's 14 days); no key may appear twice. Timestamps compare as epoch milliseconds.

Blind spots of a quick sync (DESIGN.md "what quick cannot see") are tolerated only when asked:
`ignore_is_read` and `tolerate_campaigns` (campaigns whose list fingerprint did not change, whose
recipient/stats changes quick is not expected to see). Tolerated differences are counted, not hidden.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from bench.snapshot import CAMPAIGN_STATS, RECIPIENT_TIMESTAMPS, Snapshot, epoch_ms
from pipelines.warehouse.duckdb_file import sql_string

STATS_TOTALS = (
    "recipients", "sent", "delivered", "opened", "clicked",
    "replied", "bounced", "unsubscribed", "pending", "failed",
)  # fmt: skip

WAREHOUSE_ALIAS = "wh"

# A field is (warehouse column, kind); kind is "plain", "ts" (compare as epoch ms) or "date".
Field = tuple[str, str]
ApiRows = Callable[[Snapshot], Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]]


@dataclass(frozen=True)
class TableSpec:
    """How to read one table's key fields from a warehouse and from a snapshot."""

    name: str
    table: str
    keys: tuple[Field, ...]
    values: tuple[Field, ...]
    api_rows: ApiRows  # yields (key, campaign_id or None, values)
    campaign_column: str | None = None  # for tolerating quick's blind spots
    scd2: bool = False
    extras_allowed: bool = False
    is_read_index: int | None = None  # position of is_read in values (ignored by quick)


@dataclass
class TableCheck:
    """The result of comparing one table."""

    name: str
    api_rows: int = 0
    warehouse_rows: int = 0
    missing: int = 0
    extra: int = 0
    differing: int = 0
    duplicates: int = 0
    tolerated: int = 0
    examples: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not (self.missing or self.extra or self.differing or self.duplicates)


@dataclass
class TruthReport:
    """Per-table checks; `ok` only when every table is ok."""

    tables: list[TableCheck]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def tolerated(self) -> int:
        return sum(t.tolerated for t in self.tables)

    def summary(self) -> str:
        lines = []
        for t in self.tables:
            state = "ok" if t.ok else "MISMATCH"
            detail = t.error or (
                f"api={t.api_rows} wh={t.warehouse_rows} missing={t.missing} extra={t.extra} "
                f"differing={t.differing} dup={t.duplicates} tolerated={t.tolerated}"
            )
            lines.append(f"{t.name}: {state} ({detail})")
            lines.extend(f"    e.g. {e}" for e in t.examples)
        return "\n".join(lines)


# --- API side -------------------------------------------------------------------------------------


def _workspace_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    a = s.account
    yield (
        (str(a["workspace"]["id"]),),
        None,
        (
            a["workspace"]["name"],
            a["plan"],
            a["credits"]["balance"],
            a["counts"]["campaigns"],
            a["counts"]["email_accounts"],
            a["counts"]["lists"],
        ),
    )


def _campaign_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for c in s.campaigns:
        stats = c.get("stats") or {}
        yield (str(c["id"]),), None, (c["name"], c["status"], *(stats.get(k) for k in CAMPAIGN_STATS))


def _recipient_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for cid, rows in s.recipients.items():
        for r in rows:
            yield (r.id,), cid, (cid, *r.key)


def _stats_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for cid, st in s.stats.items():
        yield (cid,), cid, tuple(st["totals"].get(k) for k in STATS_TOTALS)


def _variant_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for cid, st in s.stats.items():
        for v in st.get("variants") or []:
            yield (cid, v["index"]), cid, (v["subject"], v["sent"], v["replied"])


def _daily_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for cid, st in s.stats.items():
        for d in st.get("daily") or []:
            yield (cid, d["date"]), cid, (d["sent"],)


def _reply_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for r in s.replies:
        cid = str(r["campaign_id"])
        yield (
            (str(r["id"]),),
            cid,
            (
                cid,
                str(r["email_account_id"]),
                r["reply_type"],
                epoch_ms(r["received_at"]),
                r["is_read"],
            ),
        )


def _mailbox_rows(s: Snapshot) -> Iterable[tuple[tuple[Any, ...], str | None, tuple[Any, ...]]]:
    for m in s.mailboxes:
        yield (str(m["id"]),), None, (m["email"], m["is_active"], m["daily_send_limit"], m["sent_today"])


_TS = tuple((name, "ts") for name in RECIPIENT_TIMESTAMPS)

OUR_SPECS: tuple[TableSpec, ...] = (
    TableSpec("workspaces", "workspaces", (("id", "plain"),),
              tuple((c, "plain") for c in ("name", "plan", "credits__balance", "counts__campaigns",
                                           "counts__email_accounts", "counts__lists")), _workspace_rows),
    TableSpec("campaigns", "campaigns", (("id", "plain"),),
              (("name", "plain"), ("status", "plain"), *((f"stats__{k}", "plain") for k in CAMPAIGN_STATS)),
              _campaign_rows, scd2=True),
    TableSpec("campaign_recipients", "campaign_recipients", (("id", "plain"),),
              (("campaign_id", "plain"), ("email", "plain"), ("status", "plain"), ("current_step", "plain"), *_TS),
              _recipient_rows, campaign_column="campaign_id"),
    TableSpec("campaign_stats", "campaign_stats", (("campaign_id", "plain"),),
              tuple((f"totals__{k}", "plain") for k in STATS_TOTALS), _stats_rows, campaign_column="campaign_id"),
    TableSpec("campaign_variants", "campaign_variants", (("campaign_id", "plain"), ("index", "plain")),
              (("subject", "plain"), ("sent", "plain"), ("replied", "plain")), _variant_rows,
              campaign_column="campaign_id"),
    TableSpec("campaign_daily_sends", "campaign_daily_sends", (("campaign_id", "plain"), ("date", "date")),
              (("sent", "plain"),), _daily_rows, campaign_column="campaign_id", extras_allowed=True),
    TableSpec("replies", "replies", (("id", "plain"),),
              (("campaign_id", "plain"), ("email_account_id", "plain"), ("reply_type", "plain"),
               ("received_at", "ts"), ("is_read", "plain")), _reply_rows, is_read_index=4),
    TableSpec("email_accounts", "email_accounts", (("id", "plain"),),
              (("email", "plain"), ("is_active", "plain"), ("daily_send_limit", "plain"), ("sent_today", "plain")),
              _mailbox_rows, scd2=True),
)  # fmt: skip

# The baseline's tables: dlt's default names for the rest_api resources in bench/baseline.py
# (nested objects flattened with `__`; a child resource carries the parent id as `_campaigns_id`).
BASELINE_SPECS: tuple[TableSpec, ...] = (
    TableSpec("workspaces", "workspaces", (("workspace__id", "plain"),),
              tuple((c, "plain") for c in ("workspace__name", "plan", "credits__balance", "counts__campaigns",
                                           "counts__email_accounts", "counts__lists")), _workspace_rows),
    TableSpec("campaigns", "campaigns", (("id", "plain"),), OUR_SPECS[1].values, _campaign_rows),
    TableSpec("campaign_recipients", "campaign_recipients", (("id", "plain"),),
              (("_campaigns_id", "plain"), *OUR_SPECS[2].values[1:]), _recipient_rows),
    TableSpec("campaign_stats", "campaign_stats", (("campaign__id", "plain"),), OUR_SPECS[3].values, _stats_rows),
    OUR_SPECS[6],
    TableSpec("email_accounts", "email_accounts", (("id", "plain"),), OUR_SPECS[7].values, _mailbox_rows),
)  # fmt: skip


# --- warehouse side -------------------------------------------------------------------------------


def _expr(column: str, kind: str, present: set[str]) -> str:
    if column not in present:  # dlt creates no column for a field that was always null
        return "null"
    quoted = f'"{column}"'
    if kind == "ts":
        return f"epoch_ms(cast({quoted} as timestamptz))"
    if kind == "date":
        return f"cast(cast({quoted} as date) as varchar)"
    return quoted


def _warehouse_rows(
    con: duckdb.DuckDBPyConnection, dataset: str, spec: TableSpec, workspace_id: str, workspace_column: str
) -> list[tuple[Any, ...]] | None:
    cols = {
        r[0]
        for r in con.execute(
            "select column_name from information_schema.columns where table_catalog = current_database() "
            "and table_schema = ? and table_name = ?",
            [dataset, spec.table],
        ).fetchall()
    }
    if not cols:
        return None
    where = []
    if workspace_column in cols:
        where.append(f'"{workspace_column}" = $ws')
    if spec.scd2 and "_dlt_valid_to" in cols:
        where.append('"_dlt_valid_to" is null')
    if "deleted_at" in cols:
        where.append('"deleted_at" is null')
    select = ", ".join(_expr(c, k, cols) for c, k in (*spec.keys, *spec.values))
    sql = f'select {select} from "{dataset}"."{spec.table}"' + (" where " + " and ".join(where) if where else "")
    params = {"ws": workspace_id} if workspace_column in cols else {}
    return con.execute(sql, params).fetchall()


def _norm(value: Any) -> Any:
    """Make warehouse and API values comparable (ints from floats, bools, decimals)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if hasattr(value, "is_integer") and not isinstance(value, int):  # Decimal
        return int(value) if value == int(value) else float(value)
    return value


def check_table(
    con: duckdb.DuckDBPyConnection,
    spec: TableSpec,
    snap: Snapshot,
    *,
    dataset: str = "outreach",
    workspace_column: str = "workspace_id",
    ignore_is_read: bool = False,
    tolerate_campaigns: frozenset[str] = frozenset(),
) -> TableCheck:
    """Compare one table; differences in `tolerate_campaigns` count as tolerated, not as failures."""
    check = TableCheck(spec.name)
    rows = _warehouse_rows(con, dataset, spec, snap.workspace_id, workspace_column)
    if rows is None:
        check.error = f"table {dataset}.{spec.table} not found"
        return check
    nkeys = len(spec.keys)
    drop = spec.is_read_index if ignore_is_read else None

    def values(v: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(_norm(x) for i, x in enumerate(v) if i != drop)

    warehouse: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in rows:
        key = tuple(_norm(x) for x in row[:nkeys])
        if key in warehouse:
            check.duplicates += 1
        warehouse[key] = values(row[nkeys:])
    check.warehouse_rows = len(rows)
    seen: set[tuple[Any, ...]] = set()
    for key, campaign_id, api_values in spec.api_rows(snap):
        key = tuple(_norm(x) for x in key)
        seen.add(key)
        check.api_rows += 1
        wanted = values(api_values)
        got = warehouse.get(key)
        if got == wanted:
            continue
        if spec.campaign_column and campaign_id in tolerate_campaigns:
            check.tolerated += 1
            continue
        if got is None:
            check.missing += 1
        else:
            check.differing += 1
        if len(check.examples) < 3:
            check.examples.append(f"{key}: api={wanted} warehouse={got}")
    if not spec.extras_allowed:
        extra = [k for k in warehouse if k not in seen]
        check.extra = len(extra)
        check.examples.extend(f"{k}: in warehouse, not in API" for k in extra[: max(0, 3 - len(check.examples))])
    return check


def connect_warehouse(duckdb_path: Path) -> duckdb.DuckDBPyConnection:
    """The warehouse read-only under an alias: in a file named `outreach.duckdb` the catalog and the schema are
    both `outreach`, so `outreach.<table>` would be ambiguous."""
    con = duckdb.connect()
    con.execute(f"attach '{sql_string(duckdb_path)}' as {WAREHOUSE_ALIAS} (read_only)")
    con.execute(f"use {WAREHOUSE_ALIAS}")
    return con


def check_warehouse(
    duckdb_path: Path,
    snap: Snapshot,
    *,
    specs: tuple[TableSpec, ...] = OUR_SPECS,
    dataset: str = "outreach",
    workspace_column: str = "workspace_id",
    ignore_is_read: bool = False,
    tolerate_campaigns: frozenset[str] = frozenset(),
) -> TruthReport:
    """Compare every table of `specs` in `duckdb_path` with the snapshot."""
    con = connect_warehouse(duckdb_path)
    try:
        return TruthReport(
            [
                check_table(
                    con,
                    spec,
                    snap,
                    dataset=dataset,
                    workspace_column=workspace_column,
                    ignore_is_read=ignore_is_read,
                    tolerate_campaigns=tolerate_campaigns,
                )
                for spec in specs
            ]
        )
    finally:
        con.close()
