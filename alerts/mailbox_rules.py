"""The bounce-rate rules (28 days) and the mailbox-history rules: reputation, warmup health, daily limit."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from alerts.db import Db
from alerts.finding import Finding
from alerts.settings import AlertSettings

WINDOW_DAYS = 28
REPUTATION_DAYS = 7

_BOUNCES = """
    bounced as (
        select recipient_id, campaign_id from reporting.stg_campaign_recipients
        where bounced_at > ? and bounced_at <= ?
    ),
    bounce_events as (
        select lead_id, campaign_id, data ->> 'email_account_id' as mailbox_id
        from outreach.events where event = 'lead.bounced' and created_at > ? and created_at <= ?
    ),
    bounces as (
        select coalesce(b.recipient_id, e.lead_id) as recipient_id,
            coalesce(b.campaign_id, e.campaign_id) as campaign_id, e.mailbox_id
        from bounced b full outer join bounce_events e on b.recipient_id = e.lead_id
    )"""
_NO_EVENTS = """
    bounce_events as (select null as lead_id, null as campaign_id, null as mailbox_id where false),"""


def _bounce_ctes(db: Db) -> tuple[str, int]:
    """The `bounces` CTE (one row per bounced recipient in the window) and how many window bounds it takes."""
    if db.has("outreach", "events"):
        return _BOUNCES, 4
    text = _BOUNCES.replace(
        _BOUNCES[_BOUNCES.index("    bounce_events") : _BOUNCES.index("    bounces as")], _NO_EVENTS
    )
    return text, 2


def _campaign_mailboxes(db: Db) -> str:
    """(campaign_id, workspace_id, mailbox_id) of every campaign's sending mailboxes: the campaign's
    `email_account_ids` where the service returns them (the API's documented response does not list them);
    else the mailboxes its replies arrived at, the only other trace of who sent it."""
    if "email_account_ids" in db.columns("outreach", "campaigns"):
        return f"""
        select id as campaign_id, workspace_id, {db.dialect.unnest_json_text("email_account_ids")} as mailbox_id
        from outreach.campaigns where _dlt_valid_to is null"""
    return """
        select distinct campaign_id, workspace_id, email_account_id as mailbox_id from reporting.stg_replies
        where email_account_id is not null"""


def mailbox_bounce_rate(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """Bounces over sends in 28 days per mailbox. A bounce goes to the mailbox its `lead.bounced` event names;
    otherwise to the campaign's mailboxes by their share of its sends (an equal share: the API reports sends per
    campaign, not per mailbox), exact when the campaign sends from one mailbox, else marked as an estimate."""
    start = now - timedelta(days=WINDOW_DAYS)
    bounces, bounds = _bounce_ctes(db)
    sql = f"""
    with campaign_mailboxes as ({_campaign_mailboxes(db)}),
    shares as (
        select campaign_id, count(*) as mailboxes from campaign_mailboxes group by campaign_id
    ),
    sends as (
        select campaign_id, sum(count_sent) as sent from reporting.stg_campaign_daily_sends
        where send_date > cast(? as date) and send_date <= cast(? as date) group by campaign_id
    ),
    {bounces},
    attributed as (
        select mailbox_id, 1.0 as bounces, false as is_estimate from bounces where mailbox_id is not null
        union all
        select m.mailbox_id, 1.0 / s.mailboxes, s.mailboxes > 1
        from bounces b join campaign_mailboxes m on m.campaign_id = b.campaign_id
        join shares s on s.campaign_id = b.campaign_id
        where b.mailbox_id is null
    ),
    mailbox_sends as (
        select m.mailbox_id, min(m.workspace_id) as workspace_id, sum(x.sent * 1.0 / s.mailboxes) as sent,
            bool_or(s.mailboxes > 1) as is_estimate
        from campaign_mailboxes m join shares s on s.campaign_id = m.campaign_id
        join sends x on x.campaign_id = m.campaign_id
        group by m.mailbox_id
    ),
    mailbox_bounces as (
        select mailbox_id, sum(bounces) as bounces, bool_or(is_estimate) as is_estimate from attributed
        group by mailbox_id
    )
    select x.workspace_id, x.mailbox_id, coalesce(b.bounces, 0) / x.sent as rate, x.sent,
        x.is_estimate or coalesce(b.is_estimate, false) as is_estimate, coalesce(b.bounces, 0) as bounces
    from mailbox_sends x left join mailbox_bounces b on b.mailbox_id = x.mailbox_id
    where x.sent >= ? and coalesce(b.bounces, 0) / x.sent > ?
    """
    params = [start, now, *([start, now] * (bounds // 2)), s.min_sends, s.mailbox_bounce_rate]
    labels = _mailbox_labels(db)
    return [
        Finding(
            "mailbox_bounce_rate",
            ws,
            "mailbox",
            mb,
            labels.get(mb, mb),
            float(rate),
            s.mailbox_bounce_rate,
            volume=float(sent),
            is_estimate=bool(est),
            detail=f"{bounced:.1f} bounces over {sent:.0f} sends in {WINDOW_DAYS} days",
        )
        for ws, mb, rate, sent, est, bounced in db.rows(sql, params)
    ]


def campaign_bounce_rate(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """Bounced over contacted recipients in 28 days per campaign (a recipient counts where it was last sent to
    in the window)."""
    start = now - timedelta(days=WINDOW_DAYS)
    bounces, bounds = _bounce_ctes(db)
    sql = f"""
    with {bounces},
    contacted as (
        select workspace_id, campaign_id, count(*) as contacted from reporting.stg_campaign_recipients
        where current_step > 0 and last_sent_at > ? and last_sent_at <= ? group by workspace_id, campaign_id
    ),
    campaign_bounces as (select campaign_id, count(distinct recipient_id) as bounced from bounces group by campaign_id)
    select c.workspace_id, c.campaign_id, coalesce(b.bounced, 0) * 1.0 / c.contacted, c.contacted,
        coalesce(b.bounced, 0)
    from contacted c left join campaign_bounces b on b.campaign_id = c.campaign_id
    where c.contacted >= ? and coalesce(b.bounced, 0) * 1.0 / c.contacted > ?
    """
    params = [start, now, *([start, now] * (bounds // 2 - 1)), start, now, s.min_sends, s.campaign_bounce_rate]
    labels = dict(db.rows("select id, name from outreach.campaigns where _dlt_valid_to is null"))
    return [
        Finding(
            "campaign_bounce_rate",
            ws,
            "campaign",
            c,
            str(labels.get(c, c)),
            float(rate),
            s.campaign_bounce_rate,
            volume=float(n),
            detail=f"{bounced} of {n} contacted recipients bounced in {WINDOW_DAYS} days",
        )
        for ws, c, rate, n, bounced in db.rows(sql, params)
    ]


def mailbox_reputation_drop(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """The current reputation score against the highest one the mailbox had within the last 7 days."""
    sql = """
    with recent as (
        select email_account_id, max(reputation_score) as high from reporting.stg_email_account_history
        where valid_from_at <= ? and (valid_to_at is null or valid_to_at > ?) group by email_account_id
    )
    select h.workspace_id, h.email_account_id, h.mailbox_email, r.high - h.reputation_score, r.high, h.reputation_score
    from reporting.stg_email_account_history h join recent r on r.email_account_id = h.email_account_id
    where h.is_current and r.high - h.reputation_score >= ?
    """
    rows = db.rows(sql, [now, now - timedelta(days=REPUTATION_DAYS), s.mailbox_reputation_drop])
    return [
        Finding(
            "mailbox_reputation_drop",
            ws,
            "mailbox",
            mb,
            label,
            float(drop),
            s.mailbox_reputation_drop,
            detail=f"reputation {high:g} -> {score:g} within {REPUTATION_DAYS} days",
        )
        for ws, mb, label, drop, high, score in rows
    ]


def warmup_health_low(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    sql = """
    select workspace_id, email_account_id, mailbox_email, warmup_health_score from reporting.stg_email_account_history
    where is_current and is_warmup_enabled and warmup_health_score < ?
    """
    return [
        Finding(
            "warmup_health_low",
            ws,
            "mailbox",
            mb,
            label,
            float(health),
            s.warmup_health_low,
            detail=f"warmup health {health:g} (below {s.warmup_health_low:g})",
        )
        for ws, mb, label, health in db.rows(sql, [s.warmup_health_low])
    ]


def mailbox_at_limit(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """Days in a row (ending today or yesterday, service clock) whose observations show `sent_today` at the
    mailbox's `daily_send_limit`; a day without an observation breaks the run (unknown is not "at limit")."""
    sql = """
    select email_account_id, min(workspace_id), min(mailbox_email), cast(valid_from_at as date) as day,
        bool_or(sent_today >= daily_send_limit and daily_send_limit > 0) as at_limit
    from reporting.stg_email_account_history where valid_from_at > ? and valid_from_at <= ?
    group by email_account_id, cast(valid_from_at as date)
    """
    by_mailbox: dict[str, tuple[str, str, dict[Any, bool]]] = {}
    for mb, ws, label, day, at_limit in db.rows(sql, [now - timedelta(days=14), now]):
        by_mailbox.setdefault(mb, (ws, label, {}))[2][day] = bool(at_limit)
    today = now.date()
    out = []
    for mb, (ws, label, days) in by_mailbox.items():
        day = max(days)
        streak = 0
        while days.get(day):
            streak += 1
            day -= timedelta(days=1)
        if streak >= s.mailbox_at_limit and max(days) >= today - timedelta(days=1):
            out.append(
                Finding(
                    "mailbox_at_limit",
                    ws,
                    "mailbox",
                    mb,
                    label,
                    float(streak),
                    float(s.mailbox_at_limit),
                    detail=f"at its daily send limit {streak} days in a row",
                )
            )
    return out


def _mailbox_labels(db: Db) -> dict[str, str]:
    return dict(db.rows("select id, email from outreach.email_accounts where _dlt_valid_to is null", []))
