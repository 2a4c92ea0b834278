"""The alert rules: SQL over the warehouse, one function a rule, each returning the subjects in breach.

Rules read the raw `outreach` tables and the staging views of `reporting` (dbt's), so a reply's class is the
one the models give it (models/macros/enums.sql; `extra_reply_classes` included) and the views see webhook
events the moment they are loaded. Windows are measured on the service's clock (`service_now`), never the
wall clock: the sandbox's simulated time differs from it. `sync_stale` alone compares wall times, as the run
records are.

A rule's value, its threshold and its volume are what `reporting.alert_incidents` shows (README, "Alerts").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alerts.db import Db
from alerts.finding import Finding, Rule, aware, service_now
from alerts.mailbox_rules import (
    campaign_bounce_rate,
    mailbox_at_limit,
    mailbox_bounce_rate,
    mailbox_reputation_drop,
    warmup_health_low,
)
from alerts.settings import AlertSettings
from pipelines.core.errors import WarehouseError

__all__ = ["REGISTRY", "RULES", "Finding", "service_now"]

RULES = (
    "mailbox_bounce_rate",
    "campaign_bounce_rate",
    "mailbox_reputation_drop",
    "warmup_health_low",
    "mailbox_at_limit",
    "campaign_stalled",
    "positive_reply_waiting",
    "sync_stale",
)
REPLY_LOOKBACK_DAYS = 7  # positive replies older than this are history, not a lead waiting


def campaign_stalled(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """Active, with pending recipients (the stats' `pending`), and no send for the threshold's hours. Hours on
    the clock: a campaign that sends on weekdays only is silent 60 hours over a weekend (raise the threshold)."""
    sql = """
    with last_sends as (
        select campaign_id, max(last_sent_at) as last_sent_at
        from reporting.stg_campaign_recipients group by campaign_id
    )
    select c.workspace_id, c.id, c.name, coalesce(l.last_sent_at, c.created_at), st.total_pending
    from outreach.campaigns c join reporting.stg_campaign_stats st on st.campaign_id = c.id
    left join last_sends l on l.campaign_id = c.id
    where c._dlt_valid_to is null and c.status = 'active' and st.total_pending > 0
    """
    out = []
    for ws, c, name, last, pending in db.rows(sql, []):
        hours = (now - aware(last)).total_seconds() / 3600
        if hours >= s.campaign_stalled:
            out.append(
                Finding(
                    "campaign_stalled",
                    ws,
                    "campaign",
                    c,
                    str(name),
                    round(hours, 2),
                    s.campaign_stalled,
                    volume=float(pending),
                    detail=f"{pending} recipients pending, nothing sent for {hours:.0f} h",
                )
            )
    return out


def positive_reply_waiting(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """A positive reply (the models' reply classes: `reporting.reply_classes` for the raw webhook events, which
    the staging views only see once a build has) unread the threshold's hours after it arrived, from the synced
    replies and the `lead.replied` webhook events alike; the subject is the lead in its campaign, and a reply
    read in the service (seen by a sync) ends it."""
    if not db.has("reporting", "stg_replies"):  # the speed-to-lead check runs without a build of its own
        raise WarehouseError("no reporting.stg_replies here yet: build the models first (`outreach models`)")
    events = (
        """
        union all
        select e.workspace_id, e.campaign_id, lower(trim(e.email)), e.created_at
        from outreach.events e join reporting.reply_classes c on c.reply_type = lower(trim(e.reply_type))
        where e.event = 'lead.replied' and c.reply_class = 'positive'
    """
        if db.has("outreach", "events") and db.has("reporting", "reply_classes")
        else ""
    )
    sql = f"""
    with positive as (
        select workspace_id, campaign_id, lead_email, received_at from reporting.stg_replies
        where is_positive and not is_read
        {events}
    ),
    read_replies as (select distinct campaign_id, lead_email from reporting.stg_replies where is_read)
    select min(p.workspace_id), p.campaign_id, p.lead_email, min(p.received_at)
    from positive p left join read_replies r on r.campaign_id = p.campaign_id and r.lead_email = p.lead_email
    where r.campaign_id is null and p.received_at > ? and p.received_at <= ?
    group by p.campaign_id, p.lead_email
    """
    out = []
    for ws, campaign, email, received in db.rows(sql, [now - timedelta(days=REPLY_LOOKBACK_DAYS), now]):
        hours = (now - aware(received)).total_seconds() / 3600
        if hours >= s.positive_reply_waiting:
            out.append(
                Finding(
                    "positive_reply_waiting",
                    ws,
                    "reply",
                    f"{campaign}:{email}",
                    str(email),
                    round(hours, 2),
                    s.positive_reply_waiting,
                    detail=f"positive reply from {email} unread for {hours:.1f} h",
                )
            )
    return out


def sync_stale(db: Db, s: AlertSettings, now: datetime) -> list[Finding]:
    """Minutes since each workspace's last successful sync ended (wall clock, as the run records are)."""
    if not db.has("outreach", "sync_runs"):
        return []
    sql = """
    select workspace_id, max(workspace_name), max(ended_at) from outreach.sync_runs
    where outcome = 'ok' and workspace_id is not null group by workspace_id
    """
    wall = datetime.now(UTC)
    out = []
    for ws, name, ended in db.rows(sql, []):
        minutes = (wall - aware(ended)).total_seconds() / 60
        if minutes > s.sync_stale:
            out.append(
                Finding(
                    "sync_stale",
                    ws,
                    "workspace",
                    ws,
                    str(name or ws),
                    round(minutes, 1),
                    s.sync_stale,
                    detail=f"last successful sync ended {minutes:.0f} minutes ago",
                )
            )
    return out


REGISTRY: dict[str, Rule] = {
    "mailbox_bounce_rate": mailbox_bounce_rate,
    "campaign_bounce_rate": campaign_bounce_rate,
    "mailbox_reputation_drop": mailbox_reputation_drop,
    "warmup_health_low": warmup_health_low,
    "mailbox_at_limit": mailbox_at_limit,
    "campaign_stalled": campaign_stalled,
    "positive_reply_waiting": positive_reply_waiting,
    "sync_stale": sync_stale,
}
