"""Read the aggregated rows every chart needs from the BI file (read-only), nothing else.

Every query is an aggregate of a ``reporting`` table: campaign grain at most for the
campaign charts, mailbox-and-day for mailbox health, workspace-weekday-hour for the
heatmap. No raw row (a recipient, a reply, a lead) leaves DuckDB.

Columns that newer builds publish are read when the BI file has them (the names are the
contract): ``campaign_performance.human_reply_rate``, ``auto_reply_count`` and ``count_contacted``,
``reply_outcomes.reply_class`` and the table ``send_time_performance`` (``workspace_id``,
``weekday``, ``hour``, ``sends``, ``opens``, ``replies``, ``human_reply_rate``). Until then the
charts fall back to today's columns and say so on the page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import pandas as pd

from dashboard.bi_file import (
    FALLBACK_SEND_TIMES,
    REQUIRED,
    SEND_TIME_COLUMNS,
    columns_of,
    frame,
    iso_weekdays,
    open_bi,
    require,
)
from dashboard.errors import ReportError
from pipelines.core.root_cause import one_line

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Features:
    """Which of the newer marts' columns the BI file has (an older build lacks them)."""

    human_reply_rate: bool = False
    reply_class: bool = False
    send_time_performance: bool = False
    count_contacted: bool = False  # campaign_performance.count_contacted: human_reply_rate's denominator


@dataclass(frozen=True)
class ReportData:
    """The aggregated frames the charts are drawn from (one BI file, or one scope of it)."""

    workspaces: pd.DataFrame
    campaigns: pd.DataFrame
    daily: pd.DataFrame
    variants: pd.DataFrame
    mailboxes: pd.DataFrame
    mailbox_daily: pd.DataFrame
    outcomes: pd.DataFrame
    send_times: pd.DataFrame
    features: Features

    def workspace_parts(self) -> Iterator[tuple[str, ReportData]]:
        """Each workspace's rows, in workspace order."""
        return self._parts("workspace_id", self.workspaces["workspace_id"], _FRAMES)

    def campaign_parts(self) -> Iterator[tuple[str, ReportData]]:
        """Each campaign's rows, in campaign order; workspace-grain frames (mailboxes, send times) stay whole."""
        return self._parts("campaign_id", self.campaigns["campaign_id"], _CAMPAIGN_FRAMES)

    def workspace_shares(self, count: int) -> list[ReportData]:
        """The workspaces in at most ``count`` runs, in workspace order, of about as many scopes each (a
        workspace and each of its campaigns are one scope): each run's rows."""
        ids = self.workspaces["workspace_id"]
        weights = 1 + ids.map(self.campaigns.groupby("workspace_id").size()).fillna(0).astype("int64")
        # a workspace joins the run that its middle scope falls in
        runs = ((2 * weights.cumsum() - weights) * count // (2 * int(weights.sum()))).to_numpy()
        return [
            replace(self, **{n: getattr(self, n)[getattr(self, n)["workspace_id"].isin(run)] for n in _FRAMES})
            for _, run in ids.groupby(runs, sort=True)
        ]

    def _parts(self, column: str, keys: pd.Series, names: tuple[str, ...]) -> Iterator[tuple[str, ReportData]]:
        # each frame split once (a filter per key reads the whole frame per key: minutes for 1,000 workspaces)
        parts = {name: dict(iter(getattr(self, name).groupby(column, sort=False))) for name in names}
        for value in keys:
            key = str(value)
            frames = {
                name: parts[name][key].reset_index(drop=True) if key in parts[name] else getattr(self, name).iloc[0:0]
                for name in names
            }
            yield key, replace(self, **frames)


_FRAMES = ("workspaces", "campaigns", "daily", "variants", "mailboxes", "mailbox_daily", "outcomes", "send_times")
_CAMPAIGN_FRAMES = ("campaigns", "daily", "variants", "outcomes")


def load(bi_path: str | Path) -> ReportData:
    """Every frame the report needs, read from the BI file opened read-only."""
    path = Path(bi_path)
    con = open_bi(path)
    try:
        columns = columns_of(con)
        require(path, columns, REQUIRED)
        features = Features(
            human_reply_rate={"human_reply_rate", "count_human_replied"} <= columns.get("campaign_performance", set()),
            reply_class="reply_class" in columns.get("reply_outcomes", set()),
            send_time_performance=SEND_TIME_COLUMNS <= columns.get("send_time_performance", set()),
            count_contacted="count_contacted" in columns.get("campaign_performance", set()),
        )
        if not features.send_time_performance:
            if "send_time_performance" in columns:
                log.warning(
                    "%s: reporting.send_time_performance lacks %s; the heatmap falls back to lead_engagement",
                    path,
                    ", ".join(sorted(SEND_TIME_COLUMNS - columns["send_time_performance"])),
                )
            require(path, columns, FALLBACK_SEND_TIMES)
        return ReportData(
            workspaces=frame(con, _WORKSPACES),
            campaigns=frame(con, _campaigns_sql(features)),
            daily=frame(con, _DAILY),
            variants=frame(con, _VARIANTS),
            mailboxes=frame(con, _MAILBOXES),
            mailbox_daily=frame(con, _MAILBOX_DAILY),
            outcomes=frame(con, _outcomes_sql(features)),
            send_times=iso_weekdays(
                frame(con, _SEND_TIMES if features.send_time_performance else _SEND_TIMES_FALLBACK)
            ),
            features=features,
        )
    except duckdb.Error as exc:
        raise ReportError(f"cannot read BI file {path}: {one_line(exc)}; rebuild it with `outreach models`") from exc
    finally:
        con.close()


_WORKSPACES = """
select workspace_id, workspace_name, synced_at
from reporting.workspace_overview
order by workspace_name, workspace_id
"""


def _campaigns_sql(features: Features) -> str:
    human = "human_reply_rate" if features.human_reply_rate else "null::double"
    human_replied = "count_human_replied" if features.human_reply_rate else "null::bigint"
    # the models' own count (human_reply_rate's denominator) when published; nobody is contacted before
    # the first message (a campaign without API stats has pending 0)
    contacted = (
        "count_contacted"
        if features.count_contacted
        else "case when count_sent > 0 then count_recipients - count_pending else 0 end"
    )
    return f"""
    select
        workspace_id,
        campaign_id,
        campaign_name,
        campaign_status,
        count_recipients,
        {contacted} as count_contacted,
        count_sent,
        count_delivered,
        count_opened,
        count_clicked,
        count_replied,
        count_positive_replies,
        count_bounced,
        reply_rate,
        {human} as human_reply_rate,
        {human_replied} as count_human_replied
    from reporting.campaign_performance
    order by workspace_id, campaign_name, campaign_id
    """


_DAILY = """
select
    workspace_id,
    campaign_id,
    activity_date,
    is_send_observed,
    count_sent,
    count_replies_received,
    count_positive_replies_received
from reporting.campaign_daily
order by campaign_id, activity_date
"""

_VARIANTS = """
select
    workspace_id,
    campaign_id,
    variant_index,
    subject,
    count_variants_in_campaign,
    count_sent,
    count_replied,
    estimated_recipients,
    reply_rate,
    reply_rate_ci_low,
    reply_rate_ci_high,
    p_value,
    adjusted_p_value,
    coalesce(is_winner, false) as is_winner,
    test_state,
    recipients_needed
from reporting.variant_performance
order by campaign_id, variant_index
"""

_MAILBOXES = """
select
    workspace_id,
    email_account_id,
    mailbox_email,
    is_active,
    is_warmup_enabled,
    reputation_score,
    warmup_health_score
from reporting.mailbox_health
order by workspace_id, mailbox_email
"""

_MAILBOX_DAILY = """
select
    d.workspace_id,
    d.email_account_id,
    coalesce(h.mailbox_email, d.email_account_id) as mailbox_email,
    d.activity_date,
    d.reputation_score,
    -- a mailbox with warmup off has no warmup health to show (the service reports 0)
    case when h.is_warmup_enabled then d.warmup_health_score end as warmup_health_score,
    d.max_utilisation_pct
from reporting.mailbox_daily as d
left join reporting.mailbox_health as h using (email_account_id)
order by mailbox_email, d.activity_date
"""


def _outcomes_sql(features: Features) -> str:
    reply_class = "coalesce(reply_class, 'unclassified')" if features.reply_class else "reply_type"
    return f"""
    select
        workspace_id,
        campaign_id,
        {reply_class} as reply_class,
        bool_or(is_positive) as is_positive,
        sum(count_replies)::bigint as count_replies
    from reporting.reply_outcomes
    group by all
    order by campaign_id, reply_class
    """


_SEND_TIMES = """
select
    workspace_id,
    weekday,
    hour::integer as hour,
    sends::bigint as sends,
    replies::bigint as replies,
    human_reply_rate::double as human_reply_rate
from reporting.send_time_performance
order by workspace_id, weekday, hour
"""

# Until send_time_performance exists: leads by the UTC weekday and hour of their last contact, and
# the share of them who replied (a fraction, as the tables' rates; any reply: reply classes came later).
_SEND_TIMES_FALLBACK = """
select
    workspace_id,
    isodow(last_contacted_at)::integer as weekday,
    hour(last_contacted_at)::integer as hour,
    count(*)::bigint as sends,
    count(*) filter (where count_campaigns_replied > 0)::bigint as replies,
    count(*) filter (where count_campaigns_replied > 0) / count(*) as human_reply_rate
from reporting.lead_engagement
where last_contacted_at is not null
group by all
order by workspace_id, weekday, hour
"""
