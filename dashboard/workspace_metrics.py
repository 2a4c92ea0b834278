"""The numbers behind the workspace-grain charts (mailbox health, send times), as small tidy frames; see
dashboard/metrics.py for the campaign-grain ones and the rules both follow."""

from __future__ import annotations

import math

import pandas as pd

from dashboard.metrics import MAX_MAILBOX_LINES, MIN_SAMPLE, as_count, round2


def mailbox_series(mailbox_daily: pd.DataFrame) -> pd.DataFrame:
    """Reputation, warmup health and utilisation per day: one series per mailbox, or the mean with its range.

    Columns: series, activity_date, metric, value, low, high (low/high only for the mean).
    """
    metrics = ["reputation_score", "warmup_health_score", "max_utilisation_pct"]
    mailboxes = mailbox_daily["email_account_id"].nunique()
    if mailboxes <= MAX_MAILBOX_LINES:
        # plain Python, as metrics.daily_series; sorted as below (stable: a tie keeps its order; missing names last)
        lines = sorted(
            (
                (series, day, metric, float(value), math.nan, math.nan)
                for metric in metrics
                for series, day, value in zip(
                    mailbox_daily["mailbox_email"], mailbox_daily["activity_date"], mailbox_daily[metric], strict=True
                )
                if not pd.isna(value)
            ),
            key=lambda line: (line[2], pd.isna(line[0]), "" if pd.isna(line[0]) else line[0], line[1]),
        )
        return pd.DataFrame(lines, columns=["series", "activity_date", "metric", "value", "low", "high"])
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


def send_time_grid(send_times: pd.DataFrame) -> pd.DataFrame:
    """Every weekday (1 = Monday) and hour, with sends, the human reply rate in % (NaN without sends) and
    ``is_small`` where fewer than ``MIN_SAMPLE`` recipients were sent to (drawn greyed, with their n).

    Over several workspaces the rate is the sends-weighted mean of theirs.
    """
    sends: dict[tuple[int, int], int] = {}
    replies: dict[tuple[int, int], int] = {}
    weighted: dict[tuple[int, int], list[float]] = {}
    # plain Python, as metrics.daily_series
    for weekday, hour, count, replied, rate in zip(
        *(send_times[c] for c in ("weekday", "hour", "sends", "replies", "human_reply_rate")), strict=True
    ):
        if pd.isna(weekday) or pd.isna(hour):
            continue
        cell = (int(weekday), int(hour))
        count = as_count(count)
        sends[cell] = sends.get(cell, 0) + count
        replies[cell] = replies.get(cell, 0) + as_count(replied)
        if not pd.isna(rate):
            weighted.setdefault(cell, []).append(float(rate) * count)
    cells = [(weekday, hour) for weekday in range(1, 8) for hour in range(24)]
    counts = [sends.get(cell, 0) for cell in cells]
    return pd.DataFrame(
        {
            "weekday": [weekday for weekday, _ in cells],
            "hour": [hour for _, hour in cells],
            "sends": counts,
            "replies": [replies.get(cell, 0) for cell in cells],
            "human_reply_rate": [
                round(100.0 * math.fsum(weighted.get(cell, ())) / n, 2) if n else math.nan
                for cell, n in zip(cells, counts, strict=True)
            ],
            "is_small": [0 < n < MIN_SAMPLE for n in counts],
        }
    )
