"""The open alert incidents at the top of the dashboard, from `reporting.alert_incidents` in the BI file.

The alerts package writes the table after each build, before the BI publish (README, "Alerts"); a BI file
without it (no build has evaluated the rules yet) shows no section.
"""

from __future__ import annotations

import html
from pathlib import Path

import duckdb

_QUERY = """
select rule, subject_type, coalesce(subject_label, subject_id), state, value, threshold, coalesce(detail, ''),
    opened_at, incident_id
from reporting.alert_incidents where state <> 'resolved' order by opened_at desc, rule, subject_id
"""


def open_incidents_html(bi_path: str | Path) -> str:
    """A card listing the open and acknowledged incidents, or "" when there are none (or no table)."""
    with duckdb.connect(str(bi_path), read_only=True) as con:
        exists = con.execute(
            "select count(*) from duckdb_tables() where schema_name = 'reporting' and table_name = 'alert_incidents'"
        ).fetchone()
        if not exists or not exists[0]:
            return ""
        rows = con.execute(_QUERY).fetchall()
    if not rows:
        return ""
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(cell))}</td>"
            for cell in (rule, f"{kind} {label}", state, f"{value:.4g} (threshold {threshold:.4g})", detail)
        )
        + f"<td><code>{html.escape(str(iid))}</code></td></tr>"
        for rule, kind, label, state, value, threshold, detail, _opened, iid in rows
    )
    return (
        '<section class="card wide" id="card-alerts"><h2>Open alert incidents</h2>'
        f'<p class="caption">{len(rows)} open or acknowledged (outreach alerts lists them; outreach alerts ack ID '
        "acknowledges one)</p><table><thead><tr><th>rule</th><th>subject</th><th>state</th><th>value</th>"
        f"<th>why</th><th>id</th></tr></thead><tbody>{body}</tbody></table></section>"
    )
