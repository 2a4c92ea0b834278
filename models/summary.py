"""The figures `make demo` prints, read from the BI file (so the demo shows what BI users see)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from models.freshness import read_freshness
from models.freshness_outcome import FreshnessReport
from models.settings import WarehouseTarget


def demo_figures(bi_path: str | Path) -> dict[str, Any]:
    """Campaigns, sends, reply rates, the top variant and mailbox health, as plain values."""
    con = duckdb.connect(str(bi_path), read_only=True)
    try:
        overview = con.execute(
            """
            select
                sum(count_campaigns), sum(count_active_campaigns), sum(count_sent), sum(count_delivered),
                sum(count_replied), sum(count_positive_replies), sum(count_bounced), sum(count_replies),
                count(*)
            from reporting.workspace_overview
            """
        ).fetchall()[0]
        campaigns, active, sent, delivered, replied, positive, bounced, replies, workspaces = (
            int(v or 0) for v in overview
        )
        top = con.execute(
            """
            select c.campaign_name, v.subject, v.reply_rate, v.count_sent, v.is_winner, v.p_value
            from reporting.variant_performance v
            join reporting.campaign_performance c using (campaign_id)
            where v.count_sent >= 20 and v.count_variants_in_campaign > 1
            order by v.is_winner desc, v.reply_rate desc nulls last, v.count_sent desc
            limit 1
            """
        ).fetchall()
        human = con.execute(
            "select sum(count_human_replied), sum(count_contacted), sum(auto_reply_count) "
            "from reporting.campaign_performance"
        ).fetchall()[0]
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
        "reply_rate": round(100.0 * replied / delivered, 2) if delivered else None,
        "positive_reply_rate": round(100.0 * positive / delivered, 2) if delivered else None,
        "bounce_rate": round(100.0 * bounced / sent, 2) if sent else None,
        "human_reply_rate": round(100.0 * int(human[0] or 0) / int(human[1]), 2) if human[1] else None,
        "auto_replies": int(human[2] or 0),
        "top_variant": (
            {
                "campaign": top[0][0],
                "subject": top[0][1],
                "reply_rate": top[0][2],
                "sent": int(top[0][3]),
                "is_winner": bool(top[0][4]),
                "p_value": top[0][5],
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
        freshness = read_freshness(WarehouseTarget(destination="duckdb", duckdb_path=warehouse))

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f}%"

    lines = [
        f"Campaigns: {f['campaigns']} in {f['workspaces']} workspaces ({f['active_campaigns']} active)",
        (
            f"Sends: {f['sent']:,}; reply rate {pct(f['reply_rate'])} "
            f"(positive {pct(f['positive_reply_rate'])}), bounce rate {pct(f['bounce_rate'])}; "
            f"{f['replies']:,} replies in the inbox"
        ),
        (
            f"Human reply rate: {pct(f['human_reply_rate'])} of contacted recipients "
            f"({f['auto_replies']:,} auto-replies left out)"
        ),
    ]
    top = f["top_variant"]
    if top:
        verdict = (
            f"winner, p={top['p_value']:.4f}"
            if top["is_winner"]
            else "not a significant winner" + (f", p={top['p_value']:.3f}" if top["p_value"] is not None else "")
        )
        lines.append(
            f'Top variant: "{top["subject"]}" in {top["campaign"]}: {pct(top["reply_rate"])} of '
            f"{top['sent']:,} sends ({verdict})"
        )
    else:
        lines.append("Top variant: no A/B test with enough sends yet")
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
