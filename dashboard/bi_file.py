"""The BI file, opened read-only: the tables and columns every report needs, checked before any query, and
query results as pandas frames. A usual mistake (no file, a directory, not DuckDB, held for writing) gets a
one-line fix."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import duckdb
import pandas as pd

from dashboard.errors import ReportError
from pipelines.core.root_cause import one_line
from pipelines.warehouse.duckdb_file import is_duckdb_file, sql_string

SCHEMA = "reporting"
_ALIAS = "bi"

#: tables (and the columns of each) that today's models publish and every report needs
REQUIRED: Mapping[str, frozenset[str]] = {
    "workspace_overview": frozenset({"workspace_id", "workspace_name", "synced_at"}),
    "campaign_performance": frozenset(
        {
            "campaign_id",
            "workspace_id",
            "campaign_name",
            "campaign_status",
            "count_recipients",
            "count_pending",
            "count_sent",
            "count_delivered",
            "count_opened",
            "count_clicked",
            "count_replied",
            "count_positive_replies",
            "count_bounced",
            "reply_rate",
            "progress_rate",  # the metric dictionary's rates (fractions): a build before it held percentages
        }
    ),
    "campaign_daily": frozenset(
        {
            "campaign_id",
            "workspace_id",
            "activity_date",
            "is_send_observed",
            "count_sent",
            "count_replies_received",
            "count_positive_replies_received",
        }
    ),
    "variant_performance": frozenset(
        {
            "campaign_id",
            "workspace_id",
            "variant_index",
            "subject",
            "count_sent",
            "count_replied",
            "estimated_recipients",
            "reply_rate",
            "reply_rate_ci_low",
            "reply_rate_ci_high",
            "p_value",
            "adjusted_p_value",
            "is_winner",
            "test_state",
            "recipients_needed",
            "count_variants_in_campaign",
        }
    ),
    "mailbox_health": frozenset(
        {
            "email_account_id",
            "workspace_id",
            "mailbox_email",
            "is_active",
            "reputation_score",
            "is_warmup_enabled",
            "warmup_health_score",
        }
    ),
    "mailbox_daily": frozenset(
        {
            "email_account_id",
            "workspace_id",
            "activity_date",
            "reputation_score",
            "warmup_health_score",
            "max_utilisation_pct",
        }
    ),
    "reply_outcomes": frozenset({"campaign_id", "workspace_id", "reply_type", "is_positive", "count_replies"}),
}

#: the heatmap's source when the BI file has no send_time_performance (built by an older release)
FALLBACK_SEND_TIMES: Mapping[str, frozenset[str]] = {
    "lead_engagement": frozenset({"workspace_id", "last_contacted_at", "count_campaigns_replied"}),
}

SEND_TIME_COLUMNS = frozenset({"workspace_id", "weekday", "hour", "sends", "replies", "human_reply_rate"})


def check_bi_path(path: Path) -> None:
    """What can be told of the BI file without opening it, each usual mistake with its own one-line fix: checked
    before anything is made for a report of it."""
    if not path.exists():
        raise ReportError(
            f"BI file {path} does not exist: run `outreach models` to publish it (or pass --duckdb with the "
            "warehouse it sits beside)"
        )
    if not path.is_file():
        raise ReportError(f"BI file {path} is not a file: pass --duckdb with the warehouse file")
    if not os.access(path, os.R_OK):
        raise ReportError(f"BI file {path} is not readable by this user: fix its permissions (chmod o+r)")
    if not is_duckdb_file(path):
        raise ReportError(f"{path} is not a DuckDB file: pass --duckdb with the warehouse (the BI file sits beside it)")


def open_bi(path: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory session with the BI file attached read-only as ``bi`` (UTC, no progress bar), after
    `check_bi_path`."""
    check_bi_path(path)
    con = duckdb.connect()
    try:
        con.execute("set enable_progress_bar = false")
        con.execute("set TimeZone = 'UTC'")
        con.execute(f"attach '{sql_string(path)}' as {_ALIAS} (read_only)")
        con.execute(f"use {_ALIAS}")
    except duckdb.IOException as exc:
        con.close()
        raise ReportError(
            f"cannot open BI file {path} read-only ({one_line(exc)}): a process holds it open for writing; "
            "close it (BI tools should open it read-only) and retry"
        ) from exc
    except duckdb.Error as exc:
        con.close()
        raise ReportError(f"cannot open BI file {path}: {one_line(exc)}") from exc
    return con


def columns_of(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for table, column in con.execute(
        "select table_name, column_name from information_schema.columns where table_catalog = ? and table_schema = ?",
        [_ALIAS, SCHEMA],
    ).fetchall():
        found.setdefault(str(table), set()).add(str(column))
    return found


def require(path: Path, columns: Mapping[str, set[str]], needed: Mapping[str, frozenset[str]]) -> None:
    for table, wanted in needed.items():
        if table not in columns:
            raise ReportError(
                f"BI file {path} has no {SCHEMA}.{table}: run `outreach models` to rebuild and publish it"
            )
        missing = sorted(wanted - columns[table])
        if missing:
            raise ReportError(
                f"BI file {path}: {SCHEMA}.{table} lacks {', '.join(missing)} (published by an older build): "
                "run `outreach models`"
            )


def frame(con: duckdb.DuckDBPyConnection, sql: str) -> pd.DataFrame:
    """A query's result as pandas (through Arrow: duckdb's own .df() warns under pandas 3)."""
    frame: pd.DataFrame = con.sql(sql).to_arrow_table().to_pandas()  # pyarrow is untyped (Any): the type stated
    return frame


_DAY_NAMES = {"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 7}


def iso_weekday(value: object) -> int:
    """1 = Monday ... 7 = Sunday from a day number or name.

    DuckDB's ``dayofweek`` (0 = Sunday) and ``isodow`` (7 = Sunday) agree on 1 to 6, so 0 and 7
    both mean Sunday; names are read by their first three letters.
    """
    if isinstance(value, str) and not value.strip().isdigit():
        day = _DAY_NAMES.get(value.strip()[:3].lower())
        if day is None:
            raise ReportError(f"send_time_performance.weekday has {value!r}: expected a day number or name")
        return day
    number = int(str(value).strip().split(".")[0])
    if not 0 <= number <= 7:
        raise ReportError(f"send_time_performance.weekday has {number}: expected 0 to 7 (0 and 7 are Sunday)")
    return number or 7


def iso_weekdays(frame: pd.DataFrame) -> pd.DataFrame:
    """The send-time frame with ``weekday`` as 1 = Monday ... 7 = Sunday."""
    out = frame.copy()
    out["weekday"] = [iso_weekday(v) for v in out["weekday"]]
    return out
