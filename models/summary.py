"""The figures `make demo` prints, read from the BI file (so the demo shows what BI users see).

Every rate is the metric dictionary's (models/metrics.yml): recipients over contacted recipients, from the
workspaces' summed counts, rounded as the service and the models round; so reply >= human >= positive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from models.freshness import read_freshness
from models.freshness_outcome import FreshnessReport
from pipelines.warehouse.destination import Warehouse


def demo_figures(bi_path: str | Path) -> dict[str, Any]:
    """Campaigns, sends, reply rates, the top variant and mailbox health, as plain values."""
    con = duckdb.connect(str(bi_path), read_only=True)
    try:
        overview = con.execute(
            """
            select
                sum(count_campaigns), sum(count_active_campaigns), sum(count_sent), sum(count_contacted),
                sum(count_replied), sum(count_human_replied), sum(count_positive_replies), sum(count_bounced),
                sum(count_replies), count(*)
            from reporting.workspace_overview
            """
        ).fetchall()[0]
        campaigns, active, sent, contacted, replied, human, positive, bounced, replies, workspaces = (
            int(v or 0) for v in overview
        )
        top = con.execute(
            """
            select c.campaign_name, v.subject, v.reply_rate, v.estimated_recipients, v.is_winner, v.adjusted_p_value,
                v.test_state, v.recipients_needed
            from reporting.variant_performance v
            join reporting.campaign_performance c using (campaign_id)
            where v.estimated_recipients >= 20 and v.count_variants_in_campaign > 1
            order by v.is_winner desc, v.reply_rate desc nulls last, v.estimated_recipients desc
            limit 1
            """
        ).fetchall()
        auto_replies = con.execute("select sum(auto_reply_count) from reporting.campaign_performance").fetchall()[0][0]
        mailboxes = con.execute(
            """
            select
                count(*), count(*) filter (where is_active), round(avg(reputation_score), 1),
                count(*) filter (where reputation_trend = 'rising'),
                count(*) filter (where reputation_trend = 'falling'),
                round(avg(utilisation_pct), 1)
            from reporting.mailbox_health
            """
        ).fetchall()[0]
    finally:
        con.close()
    return {
        "workspaces": workspaces,
        "campaigns": campaigns,
        "active_campaigns": active,
        "sent": sent,
        "replied": replied,
        "replies": replies,
        "contacted": contacted,
        "reply_rate": _pct(replied, contacted),
        "human_reply_rate": _pct(human, contacted),
        "positive_reply_rate": _pct(positive, contacted),
        "bounce_rate": _pct(bounced, contacted),
        "auto_replies": int(auto_replies or 0),
        "top_variant": (
            {
                "campaign": top[0][0],
                "subject": top[0][1],
                "reply_rate": None if top[0][2] is None else round(100.0 * top[0][2], 2),
                "recipients": int(top[0][3]),
                "is_winner": bool(top[0][4]),
                "adjusted_p_value": top[0][5],
                "state": top[0][6],
                "recipients_needed": top[0][7],
            }
            if top
            else None
        ),
        "mailboxes": int(mailboxes[0] or 0),
        "active_mailboxes": int(mailboxes[1] or 0),
        "avg_reputation": mailboxes[2],
        "reputation_rising": int(mailboxes[3] or 0),
        "reputation_falling": int(mailboxes[4] or 0),
        "avg_utilisation_pct": mailboxes[5],
    }


def _pct(part: int, whole: int) -> float | None:
    """A percentage rounded as the service rounds its rates (and the models' ratio macro); None over 0."""
    return round(100.0 * part / whole, 2) if whole else None


def warehouse_of(bi_path: str | Path) -> Path:
    """The warehouse a BI file was published from (`<stem>_bi.duckdb` sits beside `<stem>.duckdb`)."""
    path = Path(bi_path)
    stem = path.stem.removesuffix("_bi")
    return path.with_name(f"{stem}.duckdb")


def demo_summary(bi_path: str | Path, freshness: FreshnessReport | None = None) -> str:
    """A few readable lines of `demo_figures`, and the last build's source freshness (read beside the
    warehouse when not given)."""
    f = demo_figures(bi_path)
    if freshness is None:
        warehouse = warehouse_of(bi_path).resolve()
        freshness = read_freshness(Warehouse(destination="duckdb", duckdb_path=warehouse))

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}%"

    lines = [
        f"Campaigns: {f['campaigns']} in {f['workspaces']} workspaces ({f['active_campaigns']} active)",
        (
            f"Sends: {f['sent']:,} messages to {f['contacted']:,} contacted recipients; {f['replies']:,} replies "
            "in the inbox"
        ),
        (
            f"Of contacted recipients: reply rate {pct(f['reply_rate'])}, human reply rate "
            f"{pct(f['human_reply_rate'])} ({f['auto_replies']:,} auto-replies left out), positive "
            f"{pct(f['positive_reply_rate'])}, bounce rate {pct(f['bounce_rate'])}"
        ),
    ]
    top = f["top_variant"]
    if top:
        if top["is_winner"]:
            verdict = f"winner, Holm-adjusted p={top['adjusted_p_value']:.4f}"
        elif top["recipients_needed"] is not None:
            verdict = f"no winner yet: about {top['recipients_needed']:,} more recipients per arm for 80% power"
        else:
            verdict = "no winner yet"
        lines.append(
            f'Top variant: "{top["subject"]}" in {top["campaign"]}: {pct(top["reply_rate"])} of about '
            f"{top['recipients']:,} recipients ({verdict})"
        )
    else:
        lines.append("Top variant: no A/B test with 20 or more recipients per variant yet")
    lines.append(
        f"Mailboxes: {f['active_mailboxes']}/{f['mailboxes']} active, average reputation {f['avg_reputation']}, "
        f"{f['reputation_rising']} rising / {f['reputation_falling']} falling, "
        f"average use of daily limit {pct(f['avg_utilisation_pct'])}"
    )
    if freshness is not None:
        lines.append(_freshness_line(freshness))
    return "\n".join(lines)


def _freshness_line(freshness: FreshnessReport) -> str:
    """`Sources: 6/6 fresh`, or that line and one indented line per source that is not fresh."""
    if freshness.error:
        return f"Sources: freshness not checked ({freshness.error})"
    stale = freshness.problems()
    head = f"Sources: {len(freshness.sources) - len(stale)}/{len(freshness.sources)} fresh"
    return "\n  ".join([head] + [s.line() for s in stale])
