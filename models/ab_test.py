"""The A/B test of subject lines, per recipient, with statsmodels (variant_performance's statistics).

The unit is the recipient: the API gives each variant's messages sent and replied recipients, and a
recipient gets several messages (the first email and its follow-ups), so messages are not a sample size.
Each variant's recipients are estimated from the campaign's messages per contacted recipient:

    estimated_recipients = round(variant messages sent * contacted recipients / campaign messages sent)

(at least the variant's replied recipients). The assumption: every variant's recipients got the same
number of messages on average (the variant is the subject line, the sequence is the campaign's).

Per campaign with two or more variants: each variant's reply rate with a 95% Wilson interval; the leader
(highest rate, ties: more recipients, then the lower index) against every other variant, a pooled
two-proportion z-test each, Holm-adjusted across the campaign's comparisons. A winner needs every arm to
have at least MIN_RECIPIENTS estimated recipients and every comparison's adjusted p below ALPHA; otherwise
the state is "no winner yet" with the approximate recipients per arm still needed for 80% power.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint, proportion_effectsize, proportions_ztest

ALPHA = 0.05
POWER = 0.8
MIN_RECIPIENTS = 100

WINNER = "winner"
NO_WINNER_YET = "no winner yet"
SINGLE_VARIANT = "single variant"
NO_DATA = "no recipients"

COLUMNS = [
    "campaign_id",
    "variant_index",
    "estimated_recipients",
    "reply_rate",
    "reply_rate_ci_low",
    "reply_rate_ci_high",
    "compared_variant_index",
    "z_score",
    "p_value",
    "adjusted_p_value",
    "is_winner",
    "test_state",
    "recipients_needed",
]


def estimate_recipients(variant_sent: int, campaign_sent: int, contacted: int, replied: int) -> int | None:
    """A variant's recipients from the campaign's messages per contacted recipient (None when unknown)."""
    if campaign_sent <= 0 or contacted <= 0:
        return None
    return max(round(variant_sent * contacted / campaign_sent), replied)


def variant_tests(variants: pd.DataFrame, campaigns: pd.DataFrame) -> pd.DataFrame:
    """One row per variant (COLUMNS). `variants`: campaign_id, variant_index, count_sent, count_replied;
    `campaigns`: campaign_id, count_sent, count_contacted (the stats endpoint's totals)."""
    totals = campaigns.set_index("campaign_id")
    rows: list[dict[str, object]] = []
    for campaign_id, arms in variants.sort_values(["campaign_id", "variant_index"]).groupby("campaign_id", sort=True):
        total = totals.loc[campaign_id] if campaign_id in totals.index else None
        rows.extend(_campaign(str(campaign_id), arms, total))
    return pd.DataFrame(rows, columns=COLUMNS)


def _campaign(campaign_id: str, arms: pd.DataFrame, total: pd.Series | None) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for arm in arms.itertuples(index=False):
        n = (
            None
            if total is None
            else estimate_recipients(
                int(arm.count_sent), int(total["count_sent"]), int(total["count_contacted"]), int(arm.count_replied)
            )
        )
        row: dict[str, object] = dict.fromkeys(COLUMNS)
        row.update(campaign_id=campaign_id, variant_index=int(arm.variant_index), estimated_recipients=n)
        row.update(is_winner=False, test_state=SINGLE_VARIANT if len(arms) < 2 else NO_WINNER_YET)
        if n:
            low, high = proportion_confint(int(arm.count_replied), n, alpha=ALPHA, method="wilson")
            row.update(reply_rate=arm.count_replied / n, reply_rate_ci_low=float(low), reply_rate_ci_high=float(high))
        out.append(row)
    if len(out) < 2:
        return out
    if any(not r["estimated_recipients"] for r in out):
        for r in out:
            r["test_state"] = NO_DATA
        return out
    _compare(out, dict(zip(arms["variant_index"].astype(int), arms["count_replied"].astype(int), strict=True)))
    return out


def _compare(rows: list[dict[str, object]], replied: dict[int, int]) -> None:
    """The leader against each other arm, Holm-adjusted; fills the rows in place."""
    leader = max(rows, key=lambda r: (float(r["reply_rate"]), int(r["estimated_recipients"]), -int(r["variant_index"])))  # type: ignore[arg-type]
    lead_index, lead_n = int(leader["variant_index"]), int(leader["estimated_recipients"])  # type: ignore[call-overload]
    others = [r for r in rows if r is not leader]
    raw: list[float] = []
    for other in others:
        index, n = int(other["variant_index"]), int(other["estimated_recipients"])  # type: ignore[call-overload]
        z, p = _ztest(replied[lead_index], lead_n, replied[index], n)
        other.update(compared_variant_index=lead_index, z_score=-z if z is not None else None, p_value=p)
        raw.append(1.0 if p is None else p)
    adjusted = [float(a) for a in multipletests(raw, alpha=ALPHA, method="holm")[1]]
    for other, adj in zip(others, adjusted, strict=True):
        other["adjusted_p_value"] = adj if other["p_value"] is not None else None
    # the leader's own row: its weakest comparison (the largest p), against that arm
    weakest = max(range(len(others)), key=lambda i: (raw[i], adjusted[i]))
    leader.update(
        compared_variant_index=others[weakest]["variant_index"],
        z_score=None if others[weakest]["z_score"] is None else -float(others[weakest]["z_score"]),  # type: ignore[arg-type]
        p_value=others[weakest]["p_value"],
        adjusted_p_value=others[weakest]["adjusted_p_value"],
    )
    smallest = min(int(r["estimated_recipients"]) for r in rows)  # type: ignore[call-overload]
    significant = all(o["adjusted_p_value"] is not None and float(o["adjusted_p_value"]) < ALPHA for o in others)  # type: ignore[arg-type]
    if smallest >= MIN_RECIPIENTS and significant:
        leader["is_winner"] = True
        for r in rows:
            r["test_state"] = WINNER
        return
    runner_up = max(others, key=lambda r: float(r["reply_rate"]))  # type: ignore[arg-type]
    needed = _recipients_needed(float(leader["reply_rate"]), float(runner_up["reply_rate"]), len(others))  # type: ignore[arg-type]
    for r in rows:
        r["recipients_needed"] = None if needed is None else max(needed, MIN_RECIPIENTS) - int(r["estimated_recipients"])  # type: ignore[call-overload]
        if r["recipients_needed"] is not None and int(r["recipients_needed"]) < 0:  # type: ignore[call-overload]
            r["recipients_needed"] = 0


def _ztest(x1: int, n1: int, x2: int, n2: int) -> tuple[float | None, float | None]:
    """Pooled two-proportion z-test (two-sided); None where undefined (no replies at all, or all replied)."""
    if x1 + x2 == 0 or x1 + x2 == n1 + n2:
        return None, None
    z, p = proportions_ztest(np.array([x1, x2]), np.array([n1, n2]), alternative="two-sided")
    return float(z), float(p)


def _recipients_needed(p1: float, p2: float, comparisons: int) -> int | None:
    """Recipients per arm for 80% power to tell p1 from p2 at ALPHA split over the comparisons (Bonferroni,
    Holm's first step: a conservative figure). None when the rates are equal (no finite sample tells them)."""
    effect = abs(float(proportion_effectsize(p1, p2)))
    if effect == 0 or not math.isfinite(effect):
        return None
    n = NormalIndPower().solve_power(effect_size=effect, alpha=ALPHA / comparisons, power=POWER, ratio=1.0)
    return math.ceil(float(n))
