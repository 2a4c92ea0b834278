"""A lead's address is keyed the same way on DuckDB and PostgreSQL: lower case, the spaces around it removed,
and nothing else (the macro `lead_email`, models/macros/portable.sql, run on both engines)."""

from __future__ import annotations

from typing import Any

import duckdb
import jinja2

from models import PROJECT_DIR

ADDRESSES = [
    " Ann.Lee@Example.org ",
    "ann.lee@example.org",
    "  two.spaces@example.org",
    "tab@example.org\t",
    "\u00a0nbsp@example.org\u00a0",
    " \u00a0mixed@example.org",
    "   ",
    "",
    None,
]


def _lead_email_sql(column: str) -> str:
    macros: Any = jinja2.Environment().from_string((PROJECT_DIR / "macros" / "portable.sql").read_text()).module
    return str(macros.lead_email(column))


def _expected(address: str | None) -> str | None:
    return None if address is None else address.strip(" ").lower()


def test_lead_email_strips_spaces_only_on_both_engines(pg_dsn: str) -> None:
    import psycopg2

    literals = ["null" if a is None else "'" + a.replace("'", "''") + "'" for a in ADDRESSES]
    values = " union all ".join(f"select {n} as n, {literal} as address" for n, literal in enumerate(literals))
    sql = f"select n, {_lead_email_sql('address')} from ({values}) as addresses order by n"
    with duckdb.connect() as con:
        on_duckdb = [row[1] for row in con.execute(sql).fetchall()]
    pg = psycopg2.connect(pg_dsn)
    try:
        with pg, pg.cursor() as cursor:
            cursor.execute(sql.replace("%", "%%"))
            on_postgres = [row[1] for row in cursor.fetchall()]
    finally:
        pg.close()
    assert on_duckdb == [_expected(a) for a in ADDRESSES]
    assert on_postgres == on_duckdb
