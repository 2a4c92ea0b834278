"""The numbers behind each chart, as small tidy frames: one function per chart.

Each takes the frames of one scope (every workspace, one workspace or one campaign) and
returns what the chart draws. Sums and rates follow models/README.md's metric definitions,
so a number on the page equals the reporting table's (rates: percentages rounded to 2
decimals, half away from zero like DuckDB's ``round``).
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
#: z of the 95% confidence intervals of the variants' reply rates (Wilson score interval)
Z95 = 1.959964

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
    """A percentage rounded like the models' rates; None when the denominator is 0."""
    return round2(100.0 * numerator / denominator) if denominator else None


def kpi_tiles(campaigns: pd.DataFrame, mailboxes: pd.DataFrame, features: Features) -> pd.DataFrame:
    """The overview tiles: contacted, human reply rate, positive, bounce rate, mailboxes healthy."""
    contacted = int(campaigns["count_contacted"].sum())
    if features.human_reply_rate:
        rated = campaigns.dropna(subset=["human_reply_rate"])
        weight = float(rated["count_contacted"].sum())
        rate = round2(float((rated["human_reply_rate"] * rated["count_contacted"]).sum()) / weight) if weight else None
        rate_label, rate_hint = "human reply rate", "% of contacted, no auto-replies"
    else:
        rate = pct(float(campaigns["count_replied"].sum()), float(campaigns["count_delivered"].sum()))
        rate_label, rate_hint = "reply rate", "% of delivered, all replies"
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
            pct(float(campaigns["count_bounced"].sum()), float(campaigns["count_sent"].sum())),
            "%",
            "% of sent",
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


def funnel_stages(campaigns: pd.DataFrame) -> pd.DataFrame:
    """Recipients at each stage: contacted, opened, clicked, replied, positive."""
    stages = [
        ("contacted", "count_contacted"),
        ("opened", "count_opened"),
        ("clicked", "count_clicked"),
        ("replied", "count_replied"),
        ("positive", "count_positive_replies"),
    ]
    return pd.DataFrame(
        [(name, int(campaigns[column].sum())) for name, column in stages], columns=["stage", "count_recipients"]
    )


def daily_series(daily: pd.DataFrame) -> pd.DataFrame:
    """Messages sent and replies received per UTC day, over every day the warehouse kept."""
    columns = ["count_sent", "count_replies_received", "count_positive_replies_received"]
    out = daily.groupby("activity_date", as_index=False)[columns].sum().sort_values("activity_date")
    return out.reset_index(drop=True)


def wilson_interval(replied: int, sent: int) -> tuple[float | None, float | None]:
    """95% Wilson score interval of replied / sent, in percent (None without sends)."""
    if sent <= 0:
        return None, None
    p = min(replied, sent) / sent
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * sent)) / (1 + z2 / sent)
    half = Z95 * math.sqrt(p * (1 - p) / sent + z2 / (4 * sent * sent)) / (1 + z2 / sent)
    return 100 * max(0.0, centre - half), 100 * min(1.0, centre + half)


def variant_rows(variants: pd.DataFrame, campaigns: pd.DataFrame) -> pd.DataFrame:
    """The variants to draw, with 95% intervals; ``attrs['ab_campaigns']`` counts the A/B campaigns in scope.

    One campaign in scope: all its variants. More: the A/B campaigns (two or more subject
    lines) with the most messages sent, at most ``MAX_AB_CAMPAIGNS``.
    """
    names = campaigns.set_index("campaign_id")["campaign_name"]
    ab = variants[variants["count_variants_in_campaign"] > 1]
    ab_campaigns = int(ab["campaign_id"].nunique())
    if len(campaigns) == 1:
        chosen = variants
    else:
        sent = ab.groupby("campaign_id")["count_sent"].sum().sort_values(ascending=False, kind="stable")
        chosen = ab[ab["campaign_id"].isin(sent.index[:MAX_AB_CAMPAIGNS])]
        order = {cid: i for i, cid in enumerate(sent.index)}
        chosen = chosen.assign(_order=chosen["campaign_id"].map(order)).sort_values(["_order", "variant_index"])
    out = chosen[
        ["campaign_id", "variant_index", "subject", "count_sent", "count_replied", "reply_rate", "p_value", "is_winner"]
    ].reset_index(drop=True)
    out.insert(1, "campaign_name", [str(names.get(cid, cid)) for cid in out["campaign_id"]])
    intervals = [wilson_interval(int(r), int(s)) for r, s in zip(out["count_replied"], out["count_sent"], strict=True)]
    out["ci_low"] = [low for low, _ in intervals]
    out["ci_high"] = [high for _, high in intervals]
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
    """Every weekday (1 = Monday) and hour, with sends and the human reply rate (NaN without sends).

    Over several workspaces the rate is the sends-weighted mean of theirs.
    """
    frame = send_times.assign(_weighted=send_times["human_reply_rate"] * send_times["sends"])
    cells = frame.groupby(["weekday", "hour"], as_index=False)[["sends", "replies", "_weighted"]].sum()
    grid = pd.MultiIndex.from_product([range(1, 8), range(24)], names=["weekday", "hour"]).to_frame(index=False)
    out = grid.merge(cells, on=["weekday", "hour"], how="left")
    out[["sends", "replies"]] = out[["sends", "replies"]].fillna(0).astype("int64")
    out["human_reply_rate"] = [
        round2(w / s) if s else float("nan") for w, s in zip(out["_weighted"].fillna(0.0), out["sends"], strict=True)
    ]
    return out.drop(columns="_weighted")
