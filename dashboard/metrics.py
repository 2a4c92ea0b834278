"""The numbers behind each chart, as small tidy frames: one function per chart.

Each takes the frames of one scope (every workspace, one workspace or one campaign) and
returns what the chart draws. Counts and rates follow the metric dictionary (models/metrics.yml):
the tables hold rates as fractions 0 to 1, rounded as the service rounds its percentages; the page
shows percentages, ``pct`` rounding them the same way (Python's ``round``, as the service), so a
number on the page equals the reporting table's x 100.
"""

from __future__ import annotations

import functools
import math
from decimal import ROUND_HALF_UP, Decimal

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
    healthy = mailboxes["is_active"].fillna(False).astype(bool) & (mailboxes["reputation_score"] >= HEALTHY_REPUTATION)
    warm_ok = ~mailboxes["is_warmup_enabled"].fillna(False).astype(bool) | (
        mailboxes["warmup_health_score"] >= HEALTHY_WARMUP
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
            int((healthy & warm_ok).sum()),
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
    if daily.empty:
        return pd.DataFrame(columns=["activity_date", "count_sent", *columns])
    grouped = daily.groupby("activity_date")
    out = grouped[columns].sum()
    out.insert(0, "count_sent", grouped["count_sent"].sum(min_count=1))
    days = pd.date_range(min(out.index), max(out.index), freq="D").date
    out = out.reindex(days)
    out[columns] = out[columns].fillna(0).astype("int64")
    return out.rename_axis("activity_date").reset_index()


def variant_rows(variants: pd.DataFrame, campaigns: pd.DataFrame) -> pd.DataFrame:
    """The variants of A/B campaigns (two or more subject lines) to draw; ``attrs['ab_campaigns']`` counts them.

    A campaign without variants, or one that sent nothing yet, is never drawn. Several A/B campaigns in
    scope: the ``MAX_AB_CAMPAIGNS`` with the most messages sent. Rates and their 95% intervals are the table's
    (per estimated recipient), in %.
    """
    names = dict(zip(campaigns["campaign_id"], campaigns["campaign_name"], strict=True))
    ab = variants[variants["count_variants_in_campaign"] > 1]
    sent = ab.groupby("campaign_id")["count_sent"].sum().sort_values(ascending=False, kind="stable")
    sent = sent[sent > 0]  # an A/B campaign that sent nothing yet has no rates: no empty rows
    ab = ab[ab["campaign_id"].isin(sent.index)]
    ab_campaigns = int(ab["campaign_id"].nunique())
    chosen = ab[ab["campaign_id"].isin(sent.index[:MAX_AB_CAMPAIGNS])]
    order = {cid: i for i, cid in enumerate(sent.index)}
    chosen = chosen.assign(_order=chosen["campaign_id"].map(order)).sort_values(["_order", "variant_index"])
    out = chosen[
        [
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
        ]
    ].reset_index(drop=True)
    out.insert(1, "campaign_name", [str(names.get(cid, cid)) for cid in out["campaign_id"]])
    rates = chosen[["reply_rate", "reply_rate_ci_low", "reply_rate_ci_high"]].to_numpy(
        dtype="float64", na_value=float("nan")
    )
    out[["rate_pct", "ci_low", "ci_high"]] = 100 * rates
    out["is_small"] = (out["estimated_recipients"].fillna(0) < MIN_SAMPLE).to_numpy()
    out.attrs["ab_campaigns"] = ab_campaigns
    return out


def mailbox_series(mailbox_daily: pd.DataFrame) -> pd.DataFrame:
    """Reputation, warmup health and utilisation per day: one series per mailbox, or the mean with its range.

    Columns: series, activity_date, metric, value, low, high (low/high only for the mean).
    """
    metrics = ["reputation_score", "warmup_health_score", "max_utilisation_pct"]
    mailboxes = mailbox_daily["email_account_id"].nunique()
    if mailboxes <= MAX_MAILBOX_LINES:
        long = mailbox_daily.melt(
            id_vars=["mailbox_email", "activity_date"], value_vars=metrics, var_name="metric", value_name="value"
        ).rename(columns={"mailbox_email": "series"})
        long["low"] = float("nan")
        long["high"] = float("nan")
    else:
        grouped = mailbox_daily.groupby("activity_date")
        frames = []
        for metric in metrics:
            stats = grouped[metric].agg(["mean", "min", "max"]).reset_index()
            frames.append(
                pd.DataFrame(
                    {
                        "series": f"mean of {mailboxes} mailboxes",
                        "activity_date": stats["activity_date"],
                        "metric": metric,
                        "value": [round2(float(v)) for v in stats["mean"]],
                        "low": stats["min"],
                        "high": stats["max"],
                    }
                )
            )
        long = pd.concat(frames, ignore_index=True)
    long = long.dropna(subset=["value"])
    return long.sort_values(["metric", "series", "activity_date"]).reset_index(drop=True)


def outcome_classes(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Reply messages per class (or per reply_type before reply classes exist), with their share."""
    out = outcomes.groupby("reply_class", as_index=False).agg(
        count_replies=("count_replies", "sum"), is_positive=("is_positive", "any")
    )
    total = float(out["count_replies"].sum())
    out["pct_of_replies"] = [pct(float(n), total) for n in out["count_replies"]]
    return out.sort_values(["count_replies", "reply_class"], ascending=[False, True]).reset_index(drop=True)


def send_time_grid(send_times: pd.DataFrame) -> pd.DataFrame:
    """Every weekday (1 = Monday) and hour, with sends, the human reply rate in % (NaN without sends) and
    ``is_small`` where fewer than ``MIN_SAMPLE`` recipients were sent to (drawn greyed, with their n).

    Over several workspaces the rate is the sends-weighted mean of theirs.
    """
    frame = send_times.assign(_weighted=send_times["human_reply_rate"] * send_times["sends"])
    cells = frame.groupby(["weekday", "hour"], as_index=False)[["sends", "replies", "_weighted"]].sum()
    grid = pd.MultiIndex.from_product([range(1, 8), range(24)], names=["weekday", "hour"]).to_frame(index=False)
    out = grid.merge(cells, on=["weekday", "hour"], how="left")
    out[["sends", "replies"]] = out[["sends", "replies"]].fillna(0).astype("int64")
    out["human_reply_rate"] = [
        round(100.0 * w / s, 2) if s else float("nan")
        for w, s in zip(out["_weighted"].fillna(0.0), out["sends"], strict=True)
    ]
    out["is_small"] = (out["sends"] > 0) & (out["sends"] < MIN_SAMPLE)
    return out.drop(columns="_weighted")
