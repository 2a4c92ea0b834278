"""The numbers behind each chart, as small tidy frames: one function per chart (workspace_metrics.py has those of
the workspace-grain charts).

Each takes the frames of one scope (every workspace, one workspace or one campaign) and
returns what the chart draws. Counts and rates follow the metric dictionary (models/metrics.yml):
the tables hold rates as fractions 0 to 1, rounded as the service rounds its percentages; the page
shows percentages, ``pct`` rounding them the same way (Python's ``round``, as the service), so a
number on the page equals the reporting table's x 100.
"""

from __future__ import annotations

import functools
import math
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import duckdb
import pandas as pd

from dashboard.data import Features

#: a mailbox is healthy when it is active, its reputation is at least this and ...
HEALTHY_REPUTATION = 80.0
#: ... its warmup health (when warmup is on) is at least this (both scores are 0 to 100)
HEALTHY_WARMUP = 70.0
#: with more mailboxes than this in a scope, mailbox health shows the mean and the min-max band
MAX_MAILBOX_LINES = 8
#: A/B campaigns shown when more than one campaign is in scope (most messages sent first)
MAX_AB_CAMPAIGNS = 10
#: a cell, bar or point with fewer recipients (or sends) than this is greyed and shows its n
MIN_SAMPLE = 20

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@functools.cache
def _duckdb_rounds_exact_binary() -> bool:
    """Whether this DuckDB rounds a double's exact binary value (2.0 and later: 2.675 is 2.67499..., so 2.67)
    or scales it by 100 first (1.x: 2.68). The reporting tables were rounded by this same DuckDB."""
    row = duckdb.execute("select round(2.675::double, 2)").fetchone()
    return row is not None and row[0] == 2.67


def round2(value: float) -> float:
    """Round to 2 decimals, half away from zero, exactly as the installed DuckDB's ``round`` rounds the models."""
    if not math.isfinite(value):
        return value
    if _duckdb_rounds_exact_binary():
        return float(Decimal(value).quantize(Decimal("0.01"), ROUND_HALF_UP))
    return math.copysign(math.floor(abs(value) * 100 + 0.5) / 100, value)


def pct(numerator: float, denominator: float) -> float | None:
    """A percentage rounded to 2 decimals as the service and the models round rates; None when the denominator
    is 0."""
    return round(100.0 * numerator / denominator, 2) if denominator else None


def as_count(value: Any) -> int:
    """A count as pandas sums it: a missing one (None, NaN, NA) adds 0."""
    return 0 if pd.isna(value) else int(value)


def _yes(value: Any) -> bool:
    """True as pandas' ``fillna(False)`` reads a value: a missing one (None, NaN, NA) is False."""
    return not pd.isna(value) and bool(value)


def kpi_tiles(campaigns: pd.DataFrame, mailboxes: pd.DataFrame, features: Features) -> pd.DataFrame:
    """The overview tiles: contacted, human reply rate, positive, bounce rate, mailboxes healthy.

    Rates are recomputed from the scope's summed counts with the metric dictionary's definitions (over
    contacted recipients), so a workspace's tiles equal workspace_overview's rates x 100."""
    contacted = int(campaigns["count_contacted"].sum())
    if features.human_reply_rate:
        rate = pct(float(campaigns["count_human_replied"].sum()), contacted)
        rate_label, rate_hint = "human reply rate", "% of contacted, no auto-replies"
    else:
        rate = pct(float(campaigns["count_replied"].sum()), contacted)
        rate_label, rate_hint = "reply rate", "% of contacted, all replies"
    healthy = sum(  # plain Python, as daily_series; a missing value is no
        _yes(active) and _yes(reputation >= HEALTHY_REPUTATION) and (not _yes(warmup) or _yes(health >= HEALTHY_WARMUP))
        for active, reputation, warmup, health in zip(
            *(mailboxes[c] for c in ("is_active", "reputation_score", "is_warmup_enabled", "warmup_health_score")),
            strict=True,
        )
    )
    rows = [
        ("contacted", "contacted", contacted, "", "recipients"),
        ("reply_rate", rate_label, rate, "%", rate_hint),
        ("positive", "positive", int(campaigns["count_positive_replies"].sum()), "", "recipients"),
        (
            "bounce_rate",
            "bounce rate",
            pct(float(campaigns["count_bounced"].sum()), contacted),
            "%",
            "% of contacted",
        ),
        (
            "mailboxes_healthy",
            "mailboxes healthy",
            healthy,
            f" of {len(mailboxes)}",
            f"reputation ≥ {HEALTHY_REPUTATION:g}, warmup ≥ {HEALTHY_WARMUP:g}",
        ),
    ]
    return pd.DataFrame(rows, columns=["key", "label", "value", "suffix", "hint"])


def funnel_stages(campaigns: pd.DataFrame, features: Features) -> pd.DataFrame:
    """Recipients at each stage, each a subset of the one before, so the funnel never widens: contacted,
    replied, replied as a person (with human reply classes), positive. Opens and clicks are not stages:
    a recipient can reply without a tracked open or click."""
    stages = [("contacted", "count_contacted"), ("replied", "count_replied")]
    if features.human_reply_rate:
        stages.append(("replied as a person", "count_human_replied"))
    stages.append(("positive", "count_positive_replies"))
    return pd.DataFrame(
        [(name, int(campaigns[column].sum())) for name, column in stages], columns=["stage", "count_recipients"]
    )


def daily_series(daily: pd.DataFrame) -> pd.DataFrame:
    """Messages sent and replies received per UTC day, over every day from the first to the last kept.

    Sends are known only on days the daily send history observed: elsewhere ``count_sent`` is NaN (drawn as
    a gap, never as 0). Replies come from the replies themselves, known on every day (0 when none)."""
    columns = ["count_replies_received", "count_positive_replies_received"]
    sent: dict[date, float] = {}
    replies: dict[date, list[int]] = {}
    # plain Python: a campaign's few rows cost pandas' grouping more than their sums, in each of an agency's
    # thousands of scopes
    for day, count_sent, *counts in zip(
        daily["activity_date"], daily["count_sent"], *(daily[c] for c in columns), strict=True
    ):
        if pd.isna(day):
            continue
        known = replies.setdefault(day, [0, 0])
        for i, count in enumerate(counts):
            known[i] += as_count(count)
        if not pd.isna(count_sent):
            sent[day] = sent.get(day, 0.0) + float(count_sent)
    if not replies:
        return pd.DataFrame(columns=["activity_date", "count_sent", *columns])
    first = min(replies)
    days = [first + timedelta(days=n) for n in range((max(replies) - first).days + 1)]
    zero = [0, 0]
    return pd.DataFrame(
        {
            "activity_date": days,
            "count_sent": [sent.get(day, math.nan) for day in days],
            **{column: [replies.get(day, zero)[i] for day in days] for i, column in enumerate(columns)},
        }
    )


def variant_rows(variants: pd.DataFrame, campaigns: pd.DataFrame) -> pd.DataFrame:
    """The variants of A/B campaigns (two or more subject lines) to draw; ``attrs['ab_campaigns']`` counts them.

    A campaign without variants, or one that sent nothing yet, is never drawn. Several A/B campaigns in
    scope: the ``MAX_AB_CAMPAIGNS`` with the most messages sent. Rates and their 95% intervals are the table's
    (per estimated recipient), in %.
    """
    names = dict(zip(campaigns["campaign_id"], campaigns["campaign_name"], strict=True))
    keys = list(
        zip(variants["campaign_id"], variants["count_variants_in_campaign"] > 1, variants["variant_index"], strict=True)
    )
    sent: dict[str, int] = {}  # the messages each A/B campaign sent (plain Python, as daily_series)
    for (campaign_id, is_ab, _), count in zip(keys, variants["count_sent"], strict=True):
        if is_ab and not pd.isna(campaign_id):
            sent[campaign_id] = sent.get(campaign_id, 0) + as_count(count)
    # most sent first, ties in campaign order; an A/B campaign that sent nothing yet has no rates: no empty rows
    ranked = [c for c in sorted(sorted(sent), key=lambda c: -sent[c]) if sent[c] > 0]
    order = {campaign_id: i for i, campaign_id in enumerate(ranked[:MAX_AB_CAMPAIGNS])}
    rows = [
        row
        for _, _, row in sorted((order[c], index, row) for row, (c, ab, index) in enumerate(keys) if ab and c in order)
    ]
    picked = {column: variants[column].to_numpy()[rows] for column in _VARIANT_COLUMNS}
    rates = {
        name: 100 * variants[column].to_numpy(dtype="float64", na_value=math.nan)[rows]
        for name, column in (
            ("rate_pct", "reply_rate"),
            ("ci_low", "reply_rate_ci_low"),
            ("ci_high", "reply_rate_ci_high"),
        )
    }
    out = pd.DataFrame(
        {
            "campaign_id": picked.pop("campaign_id"),
            "campaign_name": [str(names.get(cid, cid)) for cid in variants["campaign_id"].to_numpy()[rows]],
            **picked,
            **rates,
            "is_small": variants["estimated_recipients"].fillna(0).to_numpy()[rows] < MIN_SAMPLE,
        }
    )
    out.attrs["ab_campaigns"] = len(ranked)
    return out


_VARIANT_COLUMNS = (
    "campaign_id",
    "variant_index",
    "subject",
    "count_sent",
    "count_replied",
    "estimated_recipients",
    "reply_rate",
    "p_value",
    "adjusted_p_value",
    "is_winner",
    "test_state",
    "recipients_needed",
)


def outcome_classes(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Reply messages per class (or per reply_type before reply classes exist), with their share."""
    counts: dict[str, int] = {}
    positive: dict[str, bool] = {}
    # plain Python, as daily_series
    for reply_class, count, is_positive in zip(
        outcomes["reply_class"], outcomes["count_replies"], outcomes["is_positive"], strict=True
    ):
        if pd.isna(reply_class):
            continue
        counts[reply_class] = counts.get(reply_class, 0) + as_count(count)
        positive[reply_class] = positive.get(reply_class, False) or _yes(is_positive)
    total = float(sum(counts.values()))
    classes = sorted(counts, key=lambda c: (-counts[c], c))
    return pd.DataFrame(
        {
            "reply_class": classes,
            "count_replies": [counts[c] for c in classes],
            "is_positive": [positive[c] for c in classes],
            "pct_of_replies": [pct(float(counts[c]), total) for c in classes],
        }
    )
