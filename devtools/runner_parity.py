"""Compare the retired hand-written runner's reporting tables with the dbt project's, on one warehouse.

The runner (models/runner.py and its SQL) was removed after commit RUNNER_REV; this script takes it from
git history, builds a copy of the warehouse with it and another copy with dbt, and compares every mart
table the runner made: the same columns with the same types, the same row count and the same values
(floats within `tolerance`). Columns dbt added (e.g. workspace_name) are listed, not compared.

    .venv/bin/python -m devtools.runner_parity data/outreach.duckdb
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

RUNNER_REV = "f6d701c6b785b54884edba925f8f323c09889d08"
REPO = Path(__file__).resolve().parent.parent

#: each mart's key: rows are matched on it (the runner's ten, then the dbt project's later marts)
KEYS = {
    "campaign_performance": ["campaign_id"],
    "campaign_daily": ["campaign_id", "activity_date"],
    "variant_performance": ["campaign_id", "variant_index"],
    "mailbox_health": ["email_account_id"],
    "mailbox_daily": ["email_account_id", "activity_date"],
    "reply_outcomes": ["campaign_id", "reply_type"],
    "recipient_funnel": ["campaign_id", "recipient_status"],
    "followup_steps": ["campaign_id", "current_step"],
    "workspace_overview": ["workspace_id"],
    "lead_engagement": ["workspace_id", "lead_email"],
    # the engagement marts (dbt only: the runner never built them)
    "lead_timeline": ["event_id"],
    "campaign_event_daily": ["campaign_id", "activity_date"],
    "campaign_weekly": ["campaign_id", "week_start"],
    "launch_cohorts": ["launch_week"],
    "send_time_performance": ["workspace_id", "weekday", "hour"],
    "company_rollup": ["workspace_id", "company_domain"],
    "workspace_credits_daily": ["workspace_id", "activity_date"],
    "reply_classes": ["reply_type"],  # the reply-class map as a table, for the alerts
}

#: columns the metric dictionary redefined on purpose (the contract in docs/DESIGN.md, Metrics: rates are
#: fractions over contacted recipients, as the service's; first sends never from last_sent_at; the A/B test per
#: estimated recipient; warmup health null while warmup is off): listed, not compared. Columns the runner had
#: and dbt dropped with them are listed as removed.
REDEFINED = {
    "campaign_performance": {
        "delivery_rate", "open_rate", "click_rate", "reply_rate", "reply_rate_of_delivered", "positive_reply_rate",
        "bounce_rate", "unsubscribe_rate", "count_positive_replies", "first_sent_at", "hours_to_first_reply",
    },
    "variant_performance": {
        "reply_rate", "reply_rate_of_sent", "compared_variant_index", "compared_reply_rate", "z_score", "p_value",
        "is_significant", "is_winner",
    },
    "followup_steps": {"reply_rate", "reply_rate_of_recipients"},
    "workspace_overview": {
        "open_rate", "reply_rate", "reply_rate_of_delivered", "positive_reply_rate", "bounce_rate",
        "count_positive_replies",
    },
    "campaign_daily": {"count_sent", "cumulative_sent"},
    "mailbox_health": {"warmup_health_score", "first_warmup_health_score", "warmup_health_change", "warmup_trend"},
    "mailbox_daily": {"warmup_health_score"},
}  # fmt: skip
#: marts whose grain the dictionary narrowed: dbt's rows are compared with the runner's of the same key; the
#: runner's rows outside the new grain (all-zero days before a campaign existed) are counted, not problems
REGRAINED = {"campaign_daily"}


@dataclass
class Parity:
    tables: int = 0
    rows: int = 0
    cells: int = 0
    float_cells: int = 0
    max_float_diff: float = 0.0
    added_columns: dict[str, list[str]] = field(default_factory=dict)
    redefined_columns: dict[str, list[str]] = field(default_factory=dict)
    removed_columns: dict[str, list[str]] = field(default_factory=dict)
    rows_outside_new_grain: int = 0
    problems: list[str] = field(default_factory=list)
    #: every differing cell counted by table.column (the problems list shows the first 20 only)
    differing_cells: dict[str, int] = field(default_factory=dict)
    dbt_warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@contextmanager
def runner_tree(rev: str = RUNNER_REV, *packages: str) -> Iterator[Path]:
    """A temporary directory holding `packages` (the runner's `models` by default) as of git revision `rev`."""
    with tempfile.TemporaryDirectory(prefix="runner_") as tree:
        paths = list(packages or ("models",))
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *paths], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tree], input=archive.stdout, check=True)
        yield Path(tree)


def build_with_runner(warehouse: Path, rev: str = RUNNER_REV) -> None:
    """Build `warehouse` with the runner of git revision `rev` (in a subprocess whose `models` is the runner's)."""
    with runner_tree(rev) as tree:
        code = "import sys; from models.runner import build; build(sys.argv[1], publish=False)"
        env = {**os.environ, "PYTHONPATH": str(tree)}
        subprocess.run([sys.executable, "-c", code, str(warehouse)], cwd=tree, env=env, check=True,
                       capture_output=True, text=True, timeout=600)  # fmt: skip


def build_with_dbt(warehouse: Path) -> list[str]:
    """Build `warehouse` with dbt; returns the build's warnings (a raw table dbt did not find, ...)."""
    from models.build import build

    return build(warehouse, publish=False).warnings


def _tables(con: duckdb.DuckDBPyConnection, catalog: str) -> dict[str, list[tuple[str, str]]]:
    rows = con.execute(
        "select table_name, column_name, data_type from duckdb_columns() where database_name = ? "
        "and schema_name = 'reporting' and table_name in (select table_name from duckdb_tables() "
        "where database_name = ? and schema_name = 'reporting') order by table_name, column_index",
        [catalog, catalog],
    ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, dtype))
    return out


def compare(old: Path, new: Path, tolerance: float = 1e-9) -> Parity:
    """Every runner table and column equal in the dbt build (floats within `tolerance`)."""
    result = Parity()
    con = duckdb.connect()
    try:
        con.execute(f"attach '{old}' as old (read_only)")
        con.execute(f"attach '{new}' as new (read_only)")
        old_tables, new_tables = _tables(con, "old"), _tables(con, "new")
        for table, columns in old_tables.items():
            if table not in new_tables:
                result.problems.append(f"{table}: missing in the dbt build")
                continue
            new_types = dict(new_tables[table])
            redefined = REDEFINED.get(table, set())
            result.added_columns[table] = [c for c, _ in new_tables[table] if c not in dict(columns)]
            result.redefined_columns[table] = [c for c, _ in columns if c in redefined and c in new_types]
            result.removed_columns[table] = [c for c, _ in columns if c in redefined and c not in new_types]
            for column, dtype in columns:
                if column not in redefined and new_types.get(column) != dtype:
                    result.problems.append(f"{table}.{column}: {dtype} in the runner, {new_types.get(column)} in dbt")
            names = [c for c, _ in columns if c in new_types and c not in redefined]
            keys = KEYS.get(table, names)
            select = ", ".join(f'"{c}"' for c in names)
            order = ", ".join(f'"{c}"' for c in keys)
            source = f"old.reporting.{table}"
            if table in REGRAINED:
                on = " and ".join(f'o."{k}" = n."{k}"' for k in keys)
                kept = f"(select o.* from old.reporting.{table} o semi join new.reporting.{table} n on {on})"
                total = con.execute(f"select count(*) from old.reporting.{table}").fetchall()[0][0]
                result.rows_outside_new_grain += int(total) - int(
                    con.execute(f"select count(*) from {kept}").fetchall()[0][0]
                )
                source = kept
            a = con.execute(f"select {select} from {source} order by {order}").fetchall()
            b = con.execute(f"select {select} from new.reporting.{table} order by {order}").fetchall()
            result.tables += 1
            if len(a) != len(b):
                result.problems.append(f"{table}: {len(a)} rows in the runner, {len(b)} in dbt")
                continue
            result.rows += len(a)
            for row_a, row_b in zip(a, b, strict=True):
                for column, x, y in zip(names, row_a, row_b, strict=True):
                    result.cells += 1
                    if isinstance(x, float) or isinstance(y, float):
                        result.float_cells += 1
                        if x is None or y is None:
                            same = x is None and y is None
                        else:
                            diff = abs(float(x) - float(y))
                            result.max_float_diff = max(result.max_float_diff, diff)
                            same = diff <= tolerance or math.isclose(float(x), float(y), rel_tol=tolerance)
                    else:
                        same = x == y
                    if not same:
                        where = f"{table}.{column}"
                        result.differing_cells[where] = result.differing_cells.get(where, 0) + 1
                        if len(result.problems) < 20:
                            result.problems.append(f"{where}: {x!r} (runner) != {y!r} (dbt) at {row_a[:2]}")
    finally:
        con.close()
    return result


def run(warehouse: Path, rev: str = RUNNER_REV) -> Parity:
    """Copy `warehouse` twice, build one copy with the runner and one with dbt, compare."""
    with tempfile.TemporaryDirectory(prefix="parity_") as tmp:
        old, new = Path(tmp) / "old" / warehouse.name, Path(tmp) / "new" / warehouse.name
        for copy in (old, new):
            copy.parent.mkdir()
            shutil.copy(warehouse, copy)
        build_with_runner(old, rev)
        warnings = build_with_dbt(new)
        result = compare(old, new)
        result.dbt_warnings = warnings
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("warehouse", type=Path)
    parser.add_argument("--rev", default=RUNNER_REV, help="git revision holding the runner")
    args = parser.parse_args()
    parity = run(args.warehouse.resolve(), args.rev)
    print(json.dumps(parity.as_dict(), indent=1))
    raise SystemExit(1 if parity.problems else 0)


if __name__ == "__main__":
    main()
